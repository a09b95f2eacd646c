package replicationtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// ack is one acknowledged record: its sequence number (its value) and the
// offset the broker gave it.
type ack struct {
	seq    int64
	offset int64
}

// loadProducer is an idempotent franz-go producer with acks=all that writes
// records numbered 0, 1, 2, ... round-robin over the topic's partitions,
// paced by a ticker, until stopped or max records have been sent. It
// records every acknowledgement.
type loadProducer struct {
	c      *cluster
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	acked  atomic.Int64
	failed atomic.Int64

	mu   sync.Mutex
	acks map[int32][]ack // per partition, in acknowledgement order
	errs map[string]int  // failure reasons, counted
}

// startProducer starts a producer sending one record per interval, at most
// max records.
func (c *cluster) startProducer(interval time.Duration, max int64) *loadProducer {
	c.t.Helper()
	var seeds []string
	for _, n := range c.nodes {
		seeds = append(seeds, n.Kafka())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RequestTimeoutOverhead(3*time.Second), // a paused leader holds a request this long, not 10 s more
		kgo.MaxBufferedRecords(256),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lp := &loadProducer{c: c, cl: cl, cancel: cancel, done: make(chan struct{}),
		acks: map[int32][]ack{}, errs: map[string]int{}}
	go lp.run(ctx, interval, max) // owned by lp; stop ends it
	c.t.Cleanup(lp.stop)
	return lp
}

func (lp *loadProducer) run(ctx context.Context, interval time.Duration, max int64) {
	defer close(lp.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := int64(0); seq < max; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r := &kgo.Record{Partition: int32(seq % int64(lp.c.parts)), Value: []byte(strconv.FormatInt(seq, 10))}
		lp.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				lp.failed.Add(1)
				lp.mu.Lock()
				lp.errs[err.Error()]++
				lp.mu.Unlock()
				return
			}
			lp.acked.Add(1)
			lp.mu.Lock()
			lp.acks[r.Partition] = append(lp.acks[r.Partition], ack{seq: seq, offset: r.Offset})
			lp.mu.Unlock()
		})
	}
}

// stop ends the producer, waits for every buffered record's outcome (the
// delivery timeout bounds it) and closes the client. It is idempotent.
func (lp *loadProducer) stop() {
	lp.cancel()
	<-lp.done
	fctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	lp.cl.Flush(fctx)
	cancel()
	lp.cl.Close()
}

// waitAcked waits until n more records than now have been acknowledged.
func (lp *loadProducer) waitAcked(n int64, d time.Duration) {
	lp.c.t.Helper()
	want := lp.acked.Load() + n
	if err := proctest.WaitFor(d, func() bool { return lp.acked.Load() >= want }); err != nil {
		lp.c.t.Fatalf("want %d acknowledged records within %v; %s", want, d, lp.summary())
	}
}

// summary is a line for the test log.
func (lp *loadProducer) summary() string {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	per := make([]int, lp.c.parts)
	for p, as := range lp.acks {
		per[p] = len(as)
	}
	return fmt.Sprintf("%d acknowledged %v, %d failed %v", lp.acked.Load(), per, lp.failed.Load(), lp.errs)
}

// checkAcked reads every partition from its start to its high watermark
// and checks that each acknowledged record is there exactly once, at the
// offset it was acknowledged with, that no record appears twice, and that
// each partition's records are in the order they were produced. It returns
// how many of the producer's records it read, and the offsets of records
// whose value starts with "x-" (written by a test, not the producer).
func (lp *loadProducer) checkAcked(t *testing.T) (int, map[string]int64) {
	t.Helper()
	c := lp.c
	ctx := proctest.Context(t, 2*time.Minute)
	adm := kadm.NewClient(c.live()[0].Client())
	ends, err := adm.ListEndOffsets(ctx, c.topic)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	for p := range c.parts {
		lo, ok := ends.Lookup(c.topic, p)
		if !ok || lo.Err != nil {
			t.Fatalf("partition %d end offset: %v", p, lo.Err)
		}
		offsets[p] = kgo.NewOffset().At(0)
		want[p] = lo.Offset
	}
	var seeds []string
	for _, n := range c.live() {
		seeds = append(seeds, n.Kafka())
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: offsets}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[int32][]ack{}
	extras := map[string]int64{}
	remaining := 0
	for _, w := range want {
		if w > 0 {
			remaining++
		}
	}
	for remaining > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: %v (read %d partitions short)", ctx.Err(), remaining)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("partition %d fetch: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return
			}
			if r.Offset == want[r.Partition]-1 {
				remaining--
			}
			if strings.HasPrefix(string(r.Value), "x-") {
				extras[string(r.Value)] = r.Offset
				return
			}
			seq, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Fatalf("partition %d offset %d: value %q", r.Partition, r.Offset, r.Value)
			}
			got[r.Partition] = append(got[r.Partition], ack{seq: seq, offset: r.Offset})
		})
	}
	seen := map[int64]int64{} // seq -> offset
	total := 0
	for p := range c.parts {
		prev := int64(-1)
		for _, a := range got[p] {
			total++
			if a.seq%int64(c.parts) != int64(p) {
				t.Fatalf("record %d in partition %d", a.seq, p)
			}
			if off, dup := seen[a.seq]; dup {
				t.Fatalf("partition %d: record %d at offsets %d and %d", p, a.seq, off, a.offset)
			}
			seen[a.seq] = a.offset
			if a.seq <= prev {
				t.Fatalf("partition %d offset %d: record %d after record %d", p, a.offset, a.seq, prev)
			}
			prev = a.seq
		}
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for p, as := range lp.acks {
		for _, a := range as {
			off, ok := seen[a.seq]
			if !ok {
				t.Fatalf("partition %d: acknowledged record %d (offset %d) is lost", p, a.seq, a.offset)
			}
			if off != a.offset {
				t.Fatalf("partition %d: acknowledged record %d at offset %d, read at %d", p, a.seq, a.offset, off)
			}
		}
	}
	return total, extras
}

// maxAckedOffset is the largest offset acknowledged in partition p, or -1.
func (lp *loadProducer) maxAckedOffset(p int32) int64 {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	m := int64(-1)
	for _, a := range lp.acks[p] {
		m = max(m, a.offset)
	}
	return m
}
