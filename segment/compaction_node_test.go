package segment_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestCompactedTopic: on a cleanup.policy=compact topic, keys overwritten
// many times shrink to their latest value, a tombstone disappears once past
// delete.retention.ms, and a franz-go consumer reads the compacted log
// (offset gaps, emptied batches) from the start.
func TestCompactedTopic(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 90*time.Second)
	cfg := map[string]*string{"cleanup.policy": new("compact"), "segment.bytes": new("1024"), "delete.retention.ms": new("0")}
	if _, err := kadm.NewClient(testnode.Client(t, n.KafkaAddr())).CreateTopic(ctx, 1, 1, cfg, "compacted"); err != nil {
		t.Fatal(err)
	}
	prod := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic("compacted"), kgo.ProducerLinger(0))
	last := map[string]string{}
	for round := 0; round < 40; round++ {
		for k := 0; k < 5; k++ {
			key, val := fmt.Sprintf("k%d", k), fmt.Sprintf("v%d-%d", k, round)
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(val)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			last[key] = val
		}
	}
	// A tombstone for k4, then unique filler keys so that it ends up in a closed segment.
	if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("k4")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	delete(last, "k4")
	for i := 0; i < 30; i++ {
		key := fmt.Sprintf("filler-%d", i)
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte("f")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		last[key] = "f"
	}
	// Poll (the retention loop compacts every 200 ms) until a consumer from
	// the start sees exactly the latest value of every live key.
	var got map[string]string
	proctest.Eventually(t, 60*time.Second, "compaction to leave one record per live key", func() bool {
		var records int
		got, records = readCompacted(t, n.KafkaAddr())
		return records == len(last)
	})
	for k, v := range last {
		if got[k] != v {
			t.Fatalf("key %s: %q, want its latest value %q", k, got[k], v)
		}
	}
	if _, ok := got["k4"]; ok {
		t.Fatal("the tombstoned key is still there")
	}
}

// readCompacted consumes the whole topic from the start with franz-go.
func readCompacted(t *testing.T, addr string) (map[string]string, int) {
	t.Helper()
	cl := testnode.Client(t, addr, kgo.ConsumeTopics("compacted"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 20*time.Second)
	ends, err := adm.ListEndOffsets(ctx, "compacted")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("compacted", 0)
	got := map[string]string{}
	n := 0
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming the compacted topic stalled after %d records", n)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Value == nil {
				delete(got, string(r.Key))
			} else {
				got[string(r.Key)] = string(r.Value)
			}
			if r.Offset >= end.Offset-1 {
				done = true
			}
		})
		if done {
			return got, n
		}
	}
}
