package txntest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// retriable are the codes a transactional client retries.
func retriable(code int16) bool {
	switch code {
	case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.ConcurrentTransactions.Code:
		return true
	}
	return false
}

// initPID sends InitProducerId for id until it gets an answer that is not
// retriable, and returns it.
func initPID(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	var resp *kmsg.InitProducerIDResponse
	err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, 60000, pid, epoch
		var err error
		if resp, err = req.RequestWith(ctx, cl); err != nil {
			return false
		}
		return !retriable(resp.ErrorCode)
	})
	if err != nil {
		t.Fatalf("InitProducerId %s: %v (last %+v)", id, err, resp)
	}
	return resp
}

// newProducer is InitProducerId for transactional id id with no producer
// yet (-1, -1): the producer id and epoch it gives. It fails the test on
// an error code.
func newProducer(t *testing.T, ctx context.Context, cl *kgo.Client, id string) (int64, int16) {
	t.Helper()
	init := initPID(t, ctx, cl, id, -1, -1)
	if init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v", init)
	}
	return init.ProducerID, init.ProducerEpoch
}

func addPartitions(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, topic string, p int32) int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("AddPartitionsToTxn answer %+v", resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func endTxn(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

func describeTxn(t *testing.T, ctx context.Context, cl *kgo.Client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions answer %+v", resp)
	}
	return resp.TransactionStates[0]
}

func createTopic(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, rf int16) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
}

// TestCoordinatorStates walks one transactional id through the
// coordinator's checks on one node, with raw requests: the epoch bump
// that fences an older producer, PRODUCER_FENCED and
// INVALID_PRODUCER_ID_MAPPING, the partitions of the ongoing transaction
// in DescribeTransactions and ListTransactions, and EndTxn's answers to a
// repeat and to the opposite outcome while the end completes; then the
// state after a restart, read back from __transaction_state. The client
// is held to Kafka 3.9's versions (EndTxn v4): transactions v1, where an
// end keeps the epoch (TestCoordinatorStatesV2 is v2's).
func TestCoordinatorStates(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx := proctest.Context(t, 60*time.Second)
	createTopic(t, ctx, cl, "out", 2, 1)

	const id = "txn-states"
	first := initPID(t, ctx, cl, id, -1, -1)
	if first.ErrorCode != 0 || first.ProducerID < 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId: %+v", first)
	}
	pid := first.ProducerID
	second := initPID(t, ctx, cl, id, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != pid || second.ProducerEpoch != 1 {
		t.Fatalf("second InitProducerId: want producer %d epoch 1, got %+v", pid, second)
	}
	if code := addPartitions(t, ctx, cl, id, pid, 0, "out", 0); code != kerr.ProducerFenced.Code {
		t.Fatalf("AddPartitionsToTxn at the fenced epoch 0: %v, want PRODUCER_FENCED", kerr.ErrorForCode(code))
	}
	if code := addPartitions(t, ctx, cl, id, pid+1000, 1, "out", 0); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("AddPartitionsToTxn with another producer id: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(code))
	}
	if code := addPartitions(t, ctx, cl, id, pid, 1, "nosuchtopic", 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn of an unknown topic: %v", kerr.ErrorForCode(code))
	}
	for _, p := range []int32{0, 1} {
		if code := addPartitions(t, ctx, cl, id, pid, 1, "out", p); code != 0 {
			t.Fatalf("AddPartitionsToTxn out-%d: %v", p, kerr.ErrorForCode(code))
		}
	}
	st := describeTxn(t, ctx, cl, id)
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != pid || st.ProducerEpoch != 1 || st.TimeoutMillis != 60000 ||
		st.StartTimestamp <= 0 || len(st.Topics) != 1 || st.Topics[0].Topic != "out" || len(st.Topics[0].Partitions) != 2 {
		t.Fatalf("DescribeTransactions while ongoing: %+v", st)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.StateFilters = []string{"Ongoing", "NoSuchState"}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != id || lresp.TransactionStates[0].ProducerID != pid ||
		len(lresp.UnknownStateFilters) != 1 || lresp.UnknownStateFilters[0] != "NoSuchState" {
		t.Fatalf("ListTransactions Ongoing: %+v", lresp)
	}
	if code := endTxn(t, ctx, cl, id, pid, 0, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn at the fenced epoch: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(t, ctx, cl, id, pid, 1, true); code != 0 {
		t.Fatalf("EndTxn commit: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(t, ctx, cl, id, pid, 1, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("EndTxn abort after a commit: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if err := proctest.WaitFor(20*time.Second, func() bool {
		st = describeTxn(t, ctx, cl, id)
		return st.State == "CompleteCommit"
	}); err != nil {
		t.Fatalf("the commit never completed (markers): %+v", st)
	}
	if len(st.Topics) != 0 {
		t.Fatalf("CompleteCommit keeps partitions: %+v", st)
	}
	if code := endTxn(t, ctx, cl, id, pid, 1, true); code != 0 {
		t.Fatalf("EndTxn commit repeated: %v", kerr.ErrorForCode(code))
	}
	// The markers are in both partitions: each has one control batch
	// (offset 0) and the producer's transaction is closed.
	for _, p := range []int32{0, 1} {
		ap := describeProducer(t, ctx, cl, "out", p, pid)
		if ap == nil || ap.CurrentTxnStartOffset != -1 || ap.CoordinatorEpoch < 0 || ap.ProducerEpoch != 1 {
			t.Fatalf("out-%d after the commit: producer %+v", p, ap)
		}
		if end := endOffset(t, ctx, cl, "out", p); end != 1 {
			t.Fatalf("out-%d: log end %d, want 1 (the marker)", p, end)
		}
	}

	// A new transaction, then a new producer of the same id: the open
	// transaction is aborted with a bumped epoch before the new producer
	// gets its epoch, and the old one is fenced.
	if code := addPartitions(t, ctx, cl, id, pid, 1, "out", 0); code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	third := initPID(t, ctx, cl, id, -1, -1)
	if third.ErrorCode != 0 || third.ProducerID != pid || third.ProducerEpoch != 3 {
		t.Fatalf("InitProducerId over an open transaction: %+v, want epoch 3 (2 aborted it)", third)
	}
	if st = describeTxn(t, ctx, cl, id); st.State != "Empty" || st.ProducerEpoch != 3 {
		t.Fatalf("after the fencing InitProducerId: %+v", st)
	}
	if code := endTxn(t, ctx, cl, id, pid, 1, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn by the fenced producer: %v", kerr.ErrorForCode(code))
	}
	if end := endOffset(t, ctx, cl, "out", 0); end != 2 {
		t.Fatalf("out-0: log end %d, want 2 (commit and abort markers)", end)
	}

	// The state survives a restart: the node reads __transaction_state
	// back.
	closeCtx, closeCancel := context.WithTimeout(ctx, 10*time.Second)
	n.Close(closeCtx)
	closeCancel()
	cl.Close()
	n = testnode.Start(t, dir)
	cl2 := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	if err := proctest.WaitFor(30*time.Second, func() bool {
		st = describeTxn(t, ctx, cl2, id)
		return !retriable(st.ErrorCode)
	}); err != nil {
		t.Fatalf("DescribeTransactions after the restart: %+v", st)
	}
	if st.ErrorCode != 0 || st.State != "Empty" || st.ProducerID != pid || st.ProducerEpoch != 3 {
		t.Fatalf("after the restart: %+v", st)
	}
	if fourth := initPID(t, ctx, cl2, id, pid, 3); fourth.ErrorCode != 0 || fourth.ProducerID != pid || fourth.ProducerEpoch != 4 {
		t.Fatalf("KIP-360 InitProducerId after the restart: %+v", fourth)
	}
	if st := describeTxn(t, ctx, cl2, "no-such-id"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions of an unknown id: %+v", st)
	}
}

// describeProducer is producer pid's entry in DescribeProducers of
// topic-p, nil when absent.
func describeProducer(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32, pid int64) *kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("DescribeProducers answer %+v", resp)
	}
	for _, ap := range resp.Topics[0].Partitions[0].ActiveProducers {
		if ap.ProducerID == pid {
			return &ap
		}
	}
	return nil
}

// endOffset is topic-p's log end (ListOffsets LATEST, read_uncommitted).
func endOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32) int64 {
	t.Helper()
	return latestOffset(t, ctx, cl, topic, p, 0)
}

// latestOffset is topic-p's ListOffsets LATEST at isolation level level
// (0 read_uncommitted: the log end; 1 read_committed: the last stable
// offset).
func latestOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32, level int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = level
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets (isolation level %d) answer %+v", level, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// waitState waits until DescribeTransactions shows id in state.
func waitState(t *testing.T, ctx context.Context, cl *kgo.Client, id, state string) {
	t.Helper()
	var st kmsg.DescribeTransactionsResponseTransactionState
	if err := proctest.WaitFor(30*time.Second, func() bool {
		st = describeTxn(t, ctx, cl, id)
		return st.State == state
	}); err != nil {
		t.Fatalf("%s never reached %s: %+v", id, state, st)
	}
}

// pollFor is proctest.Poll every 200 ms.
func pollFor(d time.Duration, cond func() bool) error {
	return proctest.Poll(d, 200*time.Millisecond, cond)
}
