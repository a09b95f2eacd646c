package txntest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestTimeoutAbortAfterRestart: a producer opens a transaction (1 s
// timeout) and vanishes; the node restarts. With no request for the id,
// the coordinator loads its state partition on its own and aborts the
// expired transaction with an epoch bump: the partition gets the ABORT
// marker, the producer's open transaction there ends, and its old epoch
// is fenced. The client is held to Kafka 3.9's versions (transactions
// v1); TestCoordinatorStatesV2 has v2's timeout abort.
func TestTimeoutAbortAfterRestart(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := proctest.Context(t, 90*time.Second)
	createTopic(t, ctx, cl, "abandoned", 1, 1)
	const id = "vanished"
	var init *kmsg.InitProducerIDResponse
	if err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 1000
		init, err = req.RequestWith(ctx, cl)
		return err == nil && !retriable(init.ErrorCode)
	}); err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %+v", err, init)
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch
	writeInTxn(t, ctx, cl, id, pid, epoch, "abandoned", 0)
	cl.Close()
	closeCtx, closeCancel := context.WithTimeout(ctx, 10*time.Second)
	n.Close(closeCtx)
	closeCancel()

	n = testnode.Start(t, dir)
	cl, err = kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// transaction.abort.timed.out.transaction.cleanup.interval.ms is 10 s.
	var ap *kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	if err := proctest.Poll(40*time.Second, 200*time.Millisecond, func() bool {
		ap = describeProducer(t, ctx, cl, "abandoned", 0, pid)
		return ap != nil && ap.CurrentTxnStartOffset == -1
	}); err != nil {
		t.Fatalf("the expired transaction was never aborted: %+v", ap)
	}
	if ap.ProducerEpoch != int32(epoch)+1 {
		t.Fatalf("the abort marker's epoch %d, want the bumped %d", ap.ProducerEpoch, epoch+1)
	}
	v, err := readLog(ctx, cl, "abandoned", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.aborted) != 1 || len(v.committed) != 0 || v.markers != 1 {
		t.Fatalf("log after the timeout abort: %+v", v)
	}
	if code := endTxn(t, ctx, cl, id, pid, epoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn by the timed-out producer: %v, want PRODUCER_FENCED", kerr.ErrorForCode(code))
	}
}
