package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// Read committed with real clients on one in-process node: a franz-go
// transactional producer commits, aborts, and leaves a transaction open;
// kgo consumers in read_committed and read_uncommitted read the topic
// back; ListOffsets LATEST answers the last stable offset for
// read_committed.

func createTopic(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
}

func listLatest(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets isolation %d: %v", isolation, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// consumeUntil reads topic from the start until want values arrived or the
// deadline passed, and returns every value seen, in order.
func consumeUntil(t *testing.T, addr, topic string, committed bool, want int, d time.Duration) []string {
	return consumeMore(t, addr, topic, committed, want, d, 0)
}

// consumeMore is consumeUntil that, once want values arrived, goes on
// polling for extra and returns what came meanwhile too.
func consumeMore(t *testing.T, addr, topic string, committed bool, want int, d, extra time.Duration) []string {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(d)
	extending := false
	for time.Now().Before(deadline) {
		if len(got) >= want && !extending {
			if extra <= 0 {
				break
			}
			deadline, extending = time.Now().Add(extra), true
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func TestReadCommittedWithFranzGo(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 90*time.Second)
	admin := testnode.Client(t, n.KafkaAddr())
	const topic = "rc"
	createTopic(t, ctx, admin, topic)

	prod := testnode.Client(t, n.KafkaAddr(), kgo.TransactionalID("rc-producer"), kgo.DefaultProduceTopic(topic))
	txn := func(tag string, n int, end bool, commit bool) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i)}).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", tag, i, err)
			}
		}
		if end {
			if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatalf("EndTransaction(%v): %v", commit, err)
			}
		}
	}
	plain := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic))

	txn("c1", 3, true, true)                                                                       // 0-2, commit marker 3
	txn("a1", 2, true, false)                                                                      // 4-5, abort marker 6
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain")}).FirstErr(); err != nil { // 7
		t.Fatal(err)
	}
	txn("c2", 2, true, true)     // 8-9, commit marker 10
	txn("open", 2, false, false) // 11-12, still open

	committed := []string{"c1-0", "c1-1", "c1-2", "plain", "c2-0", "c2-1"}
	if got := consumeUntil(t, n.KafkaAddr(), topic, true, len(committed), 20*time.Second); !slices.Equal(got, committed) {
		t.Fatalf("read_committed before the open transaction ends: %q, want %q", got, committed)
	}
	all := []string{"c1-0", "c1-1", "c1-2", "a1-0", "a1-1", "plain", "c2-0", "c2-1", "open-0", "open-1"}
	if got := consumeUntil(t, n.KafkaAddr(), topic, false, len(all), 20*time.Second); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted: %q, want %q", got, all)
	}
	if lso, hw := listLatest(t, ctx, admin, topic, 1), listLatest(t, ctx, admin, topic, 0); lso != 11 || hw != 13 {
		t.Fatalf("ListOffsets LATEST: read_committed %d, read_uncommitted %d; want 11 and 13", lso, hw)
	}
	// A read_committed consumer waits at the open transaction: nothing
	// past it within a second of having read up to it.
	if got := consumeMore(t, n.KafkaAddr(), topic, true, len(committed), 20*time.Second, time.Second); !slices.Equal(got, committed) {
		t.Fatalf("read_committed while the transaction is open: %q", got)
	}

	if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(true)); err != nil {
		t.Fatal(err)
	}
	committed = append(committed, "open-0", "open-1")
	if got := consumeUntil(t, n.KafkaAddr(), topic, true, len(committed), 20*time.Second); !slices.Equal(got, committed) {
		t.Fatalf("read_committed after the commit: %q, want %q", got, committed)
	}
	err := proctest.WaitFor(10*time.Second, func() bool { return listLatest(t, ctx, admin, topic, 1) == 14 })
	if err != nil {
		t.Fatalf("ListOffsets LATEST read_committed after the last commit: %d, want 14", listLatest(t, ctx, admin, topic, 1))
	}
}
