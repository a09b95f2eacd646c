package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// stream produces sequence-numbered records with franz-go's default
// producer (idempotent, acks=all): record seq goes to partition seq%parts
// with value "seq-%08d". It produces only what the test grants, so the test
// decides how far the stream runs between faults. It records which records
// were acknowledged (their promise returned no error).
type stream struct {
	t      *testing.T
	cl     *kgo.Client
	topic  string
	parts  int
	grants chan int
	cancel context.CancelFunc
	done   chan struct{}

	produced atomic.Int64 // records handed to the client
	acked    atomic.Int64
	failed   atomic.Int64

	mu struct {
		sync.Mutex
		acked   map[int]bool
		lastErr error
		hookAt  int64  // acked count that fires hook
		hook    func() // called once, from a promise, when acked reaches hookAt
	}
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, addr, topic string, parts int32) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	resp, err := adm.CreateTopic(proctest.Context(t, 20*time.Second), parts, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

func startStream(t *testing.T, addr, topic string, parts int) *stream {
	s := &stream{t: t, topic: topic, parts: parts, grants: make(chan int, 16), done: make(chan struct{})}
	s.mu.acked = map[int]bool{}
	s.cl = newClient(t, addr,
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(4000),
		kgo.RecordDeliveryTimeout(90*time.Second),
	)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	t.Cleanup(s.stop)
	go s.run(ctx) // owned by s; stop ends it
	return s
}

func (s *stream) run(ctx context.Context) {
	defer close(s.done)
	seq, limit := 0, 0
	for {
		for seq < limit {
			n := seq
			r := &kgo.Record{Partition: int32(n % s.parts), Value: []byte(fmt.Sprintf("seq-%08d", n))}
			s.cl.Produce(ctx, r, func(_ *kgo.Record, err error) { s.settle(n, err) })
			seq++
			s.produced.Add(1)
			if ctx.Err() != nil {
				return
			}
		}
		select {
		case g := <-s.grants:
			limit += g
		case <-ctx.Done():
			return
		}
	}
}

func (s *stream) settle(seq int, err error) {
	if err != nil {
		s.failed.Add(1)
		s.mu.Lock()
		s.mu.lastErr = err
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.mu.acked[seq] = true
	total := s.acked.Add(1)
	var fire func()
	if s.mu.hook != nil && total >= s.mu.hookAt {
		fire, s.mu.hook = s.mu.hook, nil
	}
	s.mu.Unlock()
	if fire != nil {
		fire()
	}
}

// onAcked arms fn to run once, inside the promise of the record that brings
// the acknowledged count to n, so that a fault can strike at an exact point
// of the stream while later records are still buffered or in flight.
func (s *stream) onAcked(n int64, fn func()) {
	s.mu.Lock()
	if s.acked.Load() < n {
		s.mu.hookAt, s.mu.hook = n, fn
		fn = nil
	}
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// grant lets the stream produce n more records.
func (s *stream) grant(n int) { s.grants <- n }

func (s *stream) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.lastErr
}

// flush waits until the loop has handed every granted record to the
// client, then until every one of them is settled.
func (s *stream) flush(granted int64, d time.Duration) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := proctest.WaitFor(d, func() bool { return s.produced.Load() >= granted }); err != nil {
		s.t.Fatalf("the producer loop handed %d of %d records to the client", s.produced.Load(), granted)
	}
	if err := s.cl.Flush(ctx); err != nil {
		s.t.Fatalf("flushing the producer: %v (acked %d, failed %d)", err, s.acked.Load(), s.failed.Load())
	}
}

// stop ends the producer loop, fails what is still buffered (waiting for
// those promises to run) and closes the client. It is idempotent.
func (s *stream) stop() {
	s.cancel()
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.cl.AbortBufferedRecords(ctx)
	s.cl.Close()
}

// ackedSet returns a copy of the acknowledged sequence numbers.
func (s *stream) ackedSet() map[int]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]bool, len(s.mu.acked))
	for k := range s.mu.acked {
		out[k] = true
	}
	return out
}

// logStats is what verifyLog found.
type logStats struct {
	records    int // records in the log
	unackedIn  int // records in the log whose promise failed or never settled
	endOffsets []int64
}

// verifyLog reads topic from offset 0 to its end offsets and checks the
// exactly-once contract: each partition's offsets are 0..end-1 with no gap
// or duplicate, each record is in partition seq%parts, sequence numbers rise
// with offsets within a partition, no sequence number appears twice, and
// every acknowledged sequence number is present.
func verifyLog(t *testing.T, addr, topic string, parts int, acked map[int]bool) logStats {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx := proctest.Context(t, 60*time.Second)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("list start offsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	st := logStats{endOffsets: make([]int64, parts)}
	offsets := map[int32]kgo.Offset{}
	for p := range int32(parts) {
		so, ok := starts.Lookup(topic, p)
		eo, ok2 := ends.Lookup(topic, p)
		if !ok || !ok2 {
			t.Fatalf("no offsets for %s-%d", topic, p)
		}
		if so.Offset != 0 {
			t.Fatalf("%s-%d log start offset %d, want 0 (nothing was deleted)", topic, p, so.Offset)
		}
		st.endOffsets[p] = eo.Offset
		offsets[p] = kgo.NewOffset().At(0)
	}

	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	next := make([]int64, parts)
	lastSeq := make([]int, parts)
	for i := range lastSeq {
		lastSeq[i] = -1
	}
	seen := map[int]int64{}
	reached := func() bool {
		for p := range parts {
			if next[p] < st.endOffsets[p] {
				return false
			}
		}
		return true
	}
	for !reached() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed up to %v of end offsets %v before the deadline", next, st.endOffsets)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			p := int(r.Partition)
			if r.Offset != next[p] {
				t.Fatalf("%s-%d: got offset %d, want %d (gap or duplicate)", topic, p, r.Offset, next[p])
			}
			next[p]++
			var seq int
			if _, err := fmt.Sscanf(string(r.Value), "seq-%08d", &seq); err != nil {
				t.Fatalf("%s-%d@%d: value %q: %v", topic, p, r.Offset, r.Value, err)
			}
			if seq%parts != p {
				t.Fatalf("seq %d found in partition %d, produced to %d", seq, p, seq%parts)
			}
			if prev, dup := seen[seq]; dup {
				t.Fatalf("seq %d written twice: %s-%d offsets %d and %d", seq, topic, p, prev, r.Offset)
			}
			seen[seq] = r.Offset
			if seq <= lastSeq[p] {
				t.Fatalf("%s-%d@%d: seq %d after seq %d (out of order)", topic, p, r.Offset, seq, lastSeq[p])
			}
			lastSeq[p] = seq
			if !acked[seq] {
				st.unackedIn++
			}
			st.records++
		})
	}
	for p := range parts {
		if next[p] != st.endOffsets[p] {
			t.Fatalf("%s-%d: consumed to %d, end offset %d", topic, p, next[p], st.endOffsets[p])
		}
	}
	missing := 0
	first := -1
	for seq := range acked {
		if _, ok := seen[seq]; !ok {
			missing++
			if first < 0 || seq < first {
				first = seq
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d acknowledged records are missing (lowest seq %d, partition %d)", missing, first, first%parts)
	}
	return st
}
