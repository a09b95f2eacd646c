package txntest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
)

// TestTransactionalProducerCommitAbort: a franz-go transactional producer
// on one node commits one transaction and aborts the next; both reach
// their Complete state, every partition it wrote gets one marker per
// transaction, and its producer state shows no open transaction.
func TestTransactionalProducerCommitAbort(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, ctx, admin, "events", 2, 1)

	const id = "producer-commit-abort"
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID(id), kgo.DefaultProduceTopic("events"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	run := func(commit bool, tag string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i), Partition: int32(i % 2)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", tag, i, err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("EndTransaction(%v): %v", commit, err)
		}
	}
	run(true, "committed")
	run(false, "aborted")

	waitState(t, ctx, admin, id, "CompleteAbort")
	st := describeTxn(t, ctx, admin, id)
	pid := st.ProducerID
	for _, p := range []int32{0, 1} {
		// 3 records and a marker per transaction.
		if end := endOffset(t, ctx, admin, "events", p); end != 8 {
			t.Errorf("events-%d: log end %d, want 8", p, end)
		}
		if ap := describeProducer(t, ctx, admin, "events", p, pid); ap == nil || ap.CurrentTxnStartOffset != -1 {
			t.Errorf("events-%d: producer %+v, want no open transaction", p, ap)
		}
	}
}
