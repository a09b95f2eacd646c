package fetch_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// fetchReads records the size of each Fetch response a kgo client reads
// (its HookBrokerRead): the bytes on the wire.
type fetchReads struct {
	mu    sync.Mutex
	sizes []int
}

func (f *fetchReads) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key != 1 || err != nil {
		return
	}
	f.mu.Lock()
	f.sizes = append(f.sizes, n)
	f.mu.Unlock()
}

// since returns the sizes read after the first from.
func (f *fetchReads) since(from int) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.sizes[min(from, len(f.sizes)):]...)
}

func (f *fetchReads) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sizes)
}

// TestConsumerFetchSessionSendsOnlyNews: a franz-go consumer of all 200
// partitions of a topic (kgo uses fetch sessions by default) is answered,
// once it has read every record, Fetch responses that carry no idle
// partition: each is far smaller than one partition's entry times the
// partition count. A record produced to one partition reaches it in an
// answer of that partition alone. Judged by the bytes the client read, not
// by time. It failed before the node kept sessions: every answer named all
// 200 partitions (about 7.4 KB each).
func TestConsumerFetchSessionSendsOnlyNews(t *testing.T) {
	testConsumerFetchSession(t, config.Defaults().MaxIncrementalFetchSessionCacheSlots, true)
}

// TestConsumerFetchWithoutSessions: with
// max_incremental_fetch_session_cache_slots 0 the node declines sessions
// and every answer names every partition (the same consumer, the opposite
// outcome: what the test above would see without sessions).
func TestConsumerFetchWithoutSessions(t *testing.T) {
	testConsumerFetchSession(t, 0, false)
}

func testConsumerFetchSession(t *testing.T, slots int, sessions bool) {
	const parts = 200
	// An answer naming every partition is at least parts * 30 bytes (an
	// entry: partition, error, three offsets, aborted and preferred replica,
	// records length, tags); one with no idle partition is a few dozen
	// bytes plus its records.
	const small = 1 << 10
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.MaxIncrementalFetchSessionCacheSlots = slots })
	ctx := proctest.Context(t, 120*time.Second)
	prod := testnode.Client(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if r, err := kadm.NewClient(prod).CreateTopic(ctx, parts, 1, nil, "sess"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	var recs []*kgo.Record
	for p := range parts {
		recs = append(recs, &kgo.Record{Topic: "sess", Partition: int32(p), Value: []byte(fmt.Sprintf("r-%d", p))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	reads := &fetchReads{}
	cons := testnode.Client(t, n.KafkaAddr(), kgo.ConsumeTopics("sess"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.WithHooks(reads))
	consume := func(want int) map[int32]int {
		got := map[int32]int{}
		for total := 0; total < want; {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", total, want, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Partition]++; total++ })
		}
		return got
	}
	consume(parts)

	// Idle: the next answers are long polls that time out with no news.
	from := reads.count()
	if err := proctest.Poll(60*time.Second, 10*time.Millisecond, func() bool { return reads.count() >= from+4 }); err != nil {
		t.Fatalf("the consumer read %d Fetch answers after catching up: %v", reads.count()-from, err)
	}
	idle := reads.since(from + 1) // the first may be the one in flight while the last records were polled
	for _, sz := range idle {
		if sessions && sz > small {
			t.Fatalf("an idle Fetch answer of %d bytes (all since: %v); want under %d, no idle partition in it", sz, idle, small)
		}
		if !sessions && sz < parts*30 {
			t.Fatalf("a sessionless idle Fetch answer of %d bytes; want every partition in it (>= %d)", sz, parts*30)
		}
	}

	// One record on partition 7: it arrives, and the answers around it
	// stay small.
	from = reads.count()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "sess", Partition: 7, Value: []byte("news")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consume(1); got[7] != 1 {
		t.Fatalf("consumed %v, want the record of partition 7", got)
	}
	if sessions {
		for _, sz := range reads.since(from + 1) {
			if sz > small {
				t.Fatalf("a Fetch answer of %d bytes after one record on one partition; want under %d", sz, small)
			}
		}
		fams := testnode.Scrape(t, n)
		if v, _ := testnode.MetricValue(fams, "kafka_server_fetchsessioncache_num_incremental_fetch_sessions"); v < 1 {
			t.Errorf("num_incremental_fetch_sessions %v, want >= 1", v)
		}
		if v, _ := testnode.MetricValue(fams, "kafka_server_fetchsessioncache_num_incremental_fetch_partitions_cached"); v < parts {
			t.Errorf("num_incremental_fetch_partitions_cached %v, want >= %d", v, parts)
		}
	}
}
