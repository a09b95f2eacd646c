package txntest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
// state after a restart, read back from __transaction_state.
func TestCoordinatorStates(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
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
	st = describeTxn(t, ctx, cl, id)
	if st.State != "PrepareCommit" && st.State != "CompleteCommit" {
		t.Fatalf("after EndTxn commit: %+v", st)
	}
	if code := endTxn(t, ctx, cl, id, pid, 1, true); code != 0 && code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("EndTxn commit repeated: %v", kerr.ErrorForCode(code))
	}
	if st := describeTxn(t, ctx, cl, "no-such-id"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions of an unknown id: %+v", st)
	}
}
