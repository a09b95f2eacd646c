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
	"github.com/shale-io/shale/segment/batch"
)

// The requests that could open a transaction no coordinator knows, or keep
// one from ending (issue 22, items 1 and 4), sent with raw requests by a
// real client against a real node.

// produceRaw sends one batch (transactional when txn) of producer pid at
// epoch, sequence seq, to topic-p with transactional id id (nil: none)
// and returns the partition's error code.
func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, id *string, txn bool, pid int64, epoch int16, seq int32, topic string, p int32) int16 {
	t.Helper()
	opts := batch.NoProducer()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, epoch, seq, txn
	opts.FirstTimestamp = time.Now().UnixMilli()
	b, err := batch.Build(nil, opts, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	if rt.TopicID, err = proctest.TopicID(ctx, cl, topic); err != nil {
		t.Fatal(err)
	}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// lastStable is topic-p's last stable offset (ListOffsets LATEST,
// read_committed).
func lastStable(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32) int64 {
	t.Helper()
	return latestOffset(t, ctx, cl, topic, p, 1)
}

// TestProduceRefusesTransactionalBatchWithoutTransactionalID: a Produce
// with no transactional id (null or empty) carrying a transactional batch
// is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka refuses
// it even with no authorizer, and leaves no producer state: neither a
// made-up producer id (which would hold the last stable offset forever)
// nor another producer's id at a higher epoch (which would fence that
// producer's commit markers) gets in. Before the fix both were appended
// (error code 0) and the LSO stayed at the made-up producer's batch.
func TestProduceRefusesTransactionalBatchWithoutTransactionalID(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx := proctest.Context(t, 60*time.Second)
	createTopic(t, ctx, cl, "noid", 1, 1)

	empty := ""
	for _, id := range []*string{nil, &empty} {
		if code := produceRaw(t, ctx, cl, id, true, 4242, 0, 0, "noid", 0); code != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Fatalf("a transactional batch with transactional id %v: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", id, kerr.ErrorForCode(code))
		}
	}
	if ap := describeProducer(t, ctx, cl, "noid", 0, 4242); ap != nil {
		t.Fatalf("the refused batch left producer state: %+v", ap)
	}
	// An idempotent batch without a transactional id is still taken.
	if code := produceRaw(t, ctx, cl, nil, false, 4343, 0, 0, "noid", 0); code != 0 {
		t.Fatalf("an idempotent batch: %v", kerr.ErrorForCode(code))
	}
	if lso, end := lastStable(t, ctx, cl, "noid", 0), endOffset(t, ctx, cl, "noid", 0); lso != end || end != 1 {
		t.Fatalf("last stable offset %d, log end %d: want both 1", lso, end)
	}

	// Another producer's id at a higher epoch, no transactional id: refused,
	// and that producer's commit completes.
	const id = "victim"
	pid, epoch := newProducer(t, ctx, cl, id)
	writeInTxn(t, ctx, cl, id, pid, epoch, "noid", 0)
	if code := produceRaw(t, ctx, cl, nil, true, pid, epoch+1, 0, "noid", 0); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("another producer's id at a higher epoch: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if code := endTxn(t, ctx, cl, id, pid, epoch, true); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitState(t, ctx, cl, id, "CompleteCommit")
	if lso, end := lastStable(t, ctx, cl, "noid", 0), endOffset(t, ctx, cl, "noid", 0); lso != end {
		t.Fatalf("after the commit: last stable offset %d, log end %d", lso, end)
	}
}

// TestMarkerRefusedForANewerEpochIsDropped: a partition whose producer
// state holds a newer epoch of the producer than the coordinator's
// refuses its marker with INVALID_PRODUCER_EPOCH (here a WriteTxnMarkers
// at a higher epoch, what the refused Produce of
// TestProduceRefusesTransactionalBatchWithoutTransactionalID did before).
// The coordinator gives that partition up, as Kafka's marker sender does,
// and completes the transaction; before the fix it retried forever, the
// id stayed in PrepareCommit and every InitProducerId for it answered
// CONCURRENT_TRANSACTIONS.
func TestMarkerRefusedForANewerEpochIsDropped(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx := proctest.Context(t, 60*time.Second)
	createTopic(t, ctx, cl, "fenced", 2, 1)
	const id = "marker-victim"
	pid, epoch := newProducer(t, ctx, cl, id)
	writeInTxn(t, ctx, cl, id, pid, epoch, "fenced", 0, 1)
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch+1, false, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "fenced", []int32{0}
	m.Topics = append(m.Topics, mt)
	wm.Markers = append(wm.Markers, m)
	wresp, err := wm.RequestWith(ctx, cl)
	if err != nil || wresp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("WriteTxnMarkers at epoch %d: %v %+v", epoch+1, err, wresp)
	}
	if code := endTxn(t, ctx, cl, id, pid, epoch, true); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitState(t, ctx, cl, id, "CompleteCommit")
	// fenced-1 got its commit marker.
	if ap := describeProducer(t, ctx, cl, "fenced", 1, pid); ap == nil || ap.CurrentTxnStartOffset != -1 {
		t.Fatalf("fenced-1 after the commit: %+v", ap)
	}
	if lso, end := lastStable(t, ctx, cl, "fenced", 1), endOffset(t, ctx, cl, "fenced", 1); lso != end {
		t.Fatalf("fenced-1: last stable offset %d, log end %d", lso, end)
	}
	if again := initPID(t, ctx, cl, id, pid, epoch); again.ErrorCode != 0 {
		t.Fatalf("InitProducerId after the commit: %+v", again)
	}
}

// TestStaleEpochAfterAbortIsInvalidProducerEpoch: a transactional batch at
// the epoch before an abort, to a partition that has not seen the newer
// epoch, is fenced by the coordinator when the leader verifies it; the
// leader answers INVALID_PRODUCER_EPOCH, which the client takes for an
// abortable error (KIP-588), as Kafka's AddPartitionsToTxnManager maps
// it, not PRODUCER_FENCED, which is fatal to it. Transactions v1 (an
// InitProducerId that aborts the open transaction and bumps the epoch,
// verify-only Produce v11) and v2 (EndTxn v5's abort bumps, Produce v12
// adds). Before the fix both answered PRODUCER_FENCED.
func TestStaleEpochAfterAbortIsInvalidProducerEpoch(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 60*time.Second)

	cl1 := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	createTopic(t, ctx, cl1, "stale", 2, 1)
	const id1 = "stale-v1"
	init := initPID(t, ctx, cl1, id1, -1, -1)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	if code := addPartitions(t, ctx, cl1, id1, pid, epoch, "stale", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := produceTxn(t, ctx, cl1, id1, pid, epoch, "stale", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if again := initPID(t, ctx, cl1, id1, pid, epoch); again.ErrorCode != 0 || again.ProducerEpoch <= epoch {
		t.Fatalf("InitProducerId that aborts: %+v", again)
	}
	if code := produceTxn(t, ctx, cl1, id1, pid, epoch, "stale", 1); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("v1: a batch at the epoch before the abort to a partition outside it: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if code := produceTxnSeq(t, ctx, cl1, id1, pid, epoch, 1, "stale", 0); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("v1: a batch at the epoch before the abort to the aborted partition: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}

	cl2 := testnode.Client(t, n.KafkaAddr())
	const id2 = "stale-v2"
	init = initPID(t, ctx, cl2, id2, -1, -1)
	pid, epoch = init.ProducerID, init.ProducerEpoch
	if code := produceTxn(t, ctx, cl2, id2, pid, epoch, "stale", 0); code != 0 {
		t.Fatalf("Produce v12: %v", kerr.ErrorForCode(code))
	}
	if end := endTxnV2(t, ctx, cl2, id2, pid, epoch, false); end.ErrorCode != 0 || end.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 abort: %+v", end)
	}
	waitState(t, ctx, cl2, id2, "CompleteAbort")
	if code := produceTxn(t, ctx, cl2, id2, pid, epoch, "stale", 1); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("v2: a batch at the epoch before the abort: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if ap := describeProducer(t, ctx, cl2, "stale", 1, pid); ap != nil {
		t.Fatalf("the fenced batch left producer state in stale-1: %+v", ap)
	}
}
