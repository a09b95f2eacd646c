package txn_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// describedProducers is DescribeProducers' answer for partition 0 of topic:
// the producer ids the partition's leader knows.
func describedProducers(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) []int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, dt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("DescribeProducers: %v", err)
	}
	var ids []int64
	for _, ap := range p.ActiveProducers {
		ids = append(ids, ap.ProducerID)
	}
	return ids
}

// TestProducerIDExpiry, on one node with producer_id_expiration 3s: a
// franz-go idempotent producer idle past it leaves the partition's producer
// state (DescribeProducers), while a transactional producer idle as long
// with its transaction open stays; the expired producer's next batches, at
// its next sequence, are accepted, and a read_committed consumer reads
// every record once.
func TestProducerIDExpiry(t *testing.T) {
	const expiry = 3 * time.Second
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.ProducerIDExpiration, c.ProducerIDExpirationCheckInterval = expiry, 100*time.Millisecond
	})
	ctx := proctest.Context(t, 90*time.Second)
	const topic = "pid-expiry"
	admin := testnode.Client(t, n.KafkaAddr())
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	idem := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	produce := func(cl *kgo.Client, vals ...string) {
		t.Helper()
		for _, v := range vals {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	produce(idem, "i-0", "i-1", "i-2")
	idemID, _, err := idem.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describedProducers(t, ctx, admin, topic); !slices.Equal(got, []int64{idemID}) {
		t.Fatalf("producers %v, want [%d]", got, idemID)
	}
	txn := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("pid-expiry-txn"),
		kgo.TransactionTimeout(time.Minute))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(txn, "t-0")
	txnIdle := time.Now()
	txnID, _, err := txn.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describedProducers(t, ctx, admin, topic); !slices.Contains(got, txnID) {
		t.Fatalf("producers %v, want %d among them", got, txnID)
	}

	// Both idle past the expiry and a few checks: only the idempotent one goes.
	var got []int64
	if err := proctest.WaitFor(30*time.Second, func() bool {
		got = describedProducers(t, ctx, admin, topic)
		return !slices.Contains(got, idemID) && time.Since(txnIdle) > expiry+500*time.Millisecond
	}); err != nil {
		t.Fatalf("producers %v: idempotent producer %d not expired: %v", got, idemID, err)
	}
	if !slices.Contains(got, txnID) {
		t.Fatalf("producers %v: transactional producer %d expired with its transaction open", got, txnID)
	}

	produce(idem, "i-3", "i-4")
	if got := describedProducers(t, ctx, admin, topic); !slices.Contains(got, idemID) {
		t.Fatalf("producers %v: %d is back after its new batches", got, idemID)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	want := []string{"i-0", "i-1", "i-2", "i-3", "i-4", "t-0"}
	cons := testnode.Client(t, n.KafkaAddr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	var read []string
	poll := func(d time.Duration) {
		pctx, cancel := context.WithTimeout(ctx, d)
		fs := cons.PollFetches(pctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { read = append(read, string(r.Value)) })
	}
	for len(read) < len(want) && ctx.Err() == nil {
		poll(2 * time.Second)
	}
	poll(time.Second) // anything more would be read twice
	slices.Sort(read)
	if !slices.Equal(read, want) {
		t.Fatalf("read_committed read %q, want each of %q once", read, want)
	}
}
