package txntest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// txnOffsetCommit sends TxnOffsetCommit (no member: generation -1) of
// topic-p at offset for group grp until its answer is not retriable, and
// returns the partition's code.
func txnOffsetCommit(t *testing.T, ctx context.Context, cl *kgo.Client, id, grp string, pid int64, epoch int16, topic string, p int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, grp, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var code int16
	if err := pollFor(30*time.Second, func() bool {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false
		}
		code = resp.Topics[0].Partitions[0].ErrorCode
		return !retriable(code)
	}); err != nil {
		t.Fatalf("TxnOffsetCommit of %s: %v (last %v)", grp, err, kerr.ErrorForCode(code))
	}
	return code
}

// fetchStableOffset is OffsetFetch with RequireStable of grp's topic-p:
// its offset (-1: none) and its code.
func fetchStableOffset(t *testing.T, ctx context.Context, cl *kgo.Client, grp, topic string, p int32) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = grp
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetFetch answer %+v", resp)
	}
	op := resp.Groups[0].Topics[0].Partitions[0]
	return op.Offset, op.ErrorCode
}

func addOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, grp string) int16 {
	t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, grp
	var code int16
	if err := pollFor(30*time.Second, func() bool {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		code = resp.ErrorCode
		return !retriable(code)
	}); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v (last %v)", err, kerr.ErrorForCode(code))
	}
	return code
}

// TestTxnOffsetCommitIsVerified: TxnOffsetCommit v0-v4 is verified with
// the transaction coordinator before its transactional batch opens a
// transaction in the group's __consumer_offsets partition (KIP-890 part
// 1), as a Produce is. A made-up producer id (no transactional id owns
// it) is refused and leaves no producer state, so no transaction that
// nothing ends holds the partition's last stable offset and answers
// RequireStable fetches UNSTABLE_OFFSET_COMMIT forever; a real producer's
// commit for a transaction the offsets partition is not in (a late retry,
// KAFKA-14402) is INVALID_TXN_STATE; once AddOffsetsToTxn put it in, the
// commit is taken and applied at the COMMIT marker. Before the fix the
// made-up producer's commit was answered 0 and its offset stayed
// UNSTABLE_OFFSET_COMMIT.
func TestTxnOffsetCommitIsVerified(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx := proctest.Context(t, 90*time.Second)
	createTopic(t, ctx, cl, "in", 1, 1)

	// A producer first: __transaction_state exists (before it does, the
	// leader cannot find a coordinator to ask, and answers
	// COORDINATOR_NOT_AVAILABLE, as Kafka's does).
	const id, real = "offsets-real", "g-real"
	pid, epoch := newProducer(t, ctx, cl, id)

	const madeUp = int64(777777)
	const grp = "g-made-up"
	if code := txnOffsetCommit(t, ctx, cl, "nobody", grp, madeUp, 0, "in", 0, 5); code == 0 {
		t.Fatal("TxnOffsetCommit of a made-up producer id was taken")
	}
	if off, code := fetchStableOffset(t, ctx, cl, grp, "in", 0); code != 0 || off != -1 {
		t.Fatalf("RequireStable fetch after the refused commit: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	offsetsPart := group.PartitionFor(grp, 50)
	if ap := describeProducer(t, ctx, cl, group.OffsetsTopic, offsetsPart, madeUp); ap != nil {
		t.Fatalf("the refused commit left producer state in %s-%d: %+v", group.OffsetsTopic, offsetsPart, ap)
	}

	// Another id's producer id: the coordinator ties the id to its own.
	if code := txnOffsetCommit(t, ctx, cl, "nobody", real, pid, epoch, "in", 0, 6); code == 0 {
		t.Fatal("TxnOffsetCommit under a transactional id that does not own the producer id was taken")
	}
	if code := txnOffsetCommit(t, ctx, cl, id, real, pid, epoch, "in", 0, 7); code != kerr.InvalidTxnState.Code {
		t.Fatalf("TxnOffsetCommit before AddOffsetsToTxn: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if code := addOffsets(t, ctx, cl, id, pid, epoch, real); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if code := txnOffsetCommit(t, ctx, cl, id, real, pid, epoch, "in", 0, 8); code != 0 {
		t.Fatalf("TxnOffsetCommit in the transaction: %v", kerr.ErrorForCode(code))
	}
	if _, code := fetchStableOffset(t, ctx, cl, real, "in", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("RequireStable fetch inside the transaction: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	if code := endTxn(t, ctx, cl, id, pid, epoch, true); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitState(t, ctx, cl, id, "CompleteCommit")
	var off int64
	var code int16
	if err := pollFor(20*time.Second, func() bool {
		off, code = fetchStableOffset(t, ctx, cl, real, "in", 0)
		return code == 0 && off == 8
	}); err != nil {
		t.Fatalf("after the commit: offset %d, %v; want 8", off, kerr.ErrorForCode(code))
	}
}

// topicIDOf is topic's id from Metadata.
func topicIDOf(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].TopicID == [16]byte{} {
		t.Fatalf("Metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// TestTxnOffsetCommitV6: TxnOffsetCommit v6 names topics by id (KIP-1319):
// a known id's offset is committed under its topic's name (OffsetFetch
// answers it after the COMMIT), an id no topic has is UNKNOWN_TOPIC_ID and
// not committed, and the answer names topics by id. A member's commit to a
// group that does not exist is GROUP_ID_NOT_FOUND at v6, ILLEGAL_GENERATION
// at v5.
func TestTxnOffsetCommitV6(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 90*time.Second)
	createTopic(t, ctx, cl, "in", 1, 1)
	inID := topicIDOf(t, ctx, cl, "in")
	unknownID := [16]byte{0xde, 0xad, 0xbe, 0xef}

	const id, grp = "txn-v6", "g-v6"
	init := initPID(t, ctx, cl, id, -1, -1)
	if init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v", init)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = grp // creates __consumer_offsets
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}

	commit := func(ids [][16]byte, memberID string, generation int32) *kmsg.TxnOffsetCommitResponse {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, grp, init.ProducerID, init.ProducerEpoch
		req.MemberID, req.Generation = memberID, generation
		for _, tid := range ids {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.TopicID = tid
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = 0, 7
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		var resp *kmsg.TxnOffsetCommitResponse
		if err := pollFor(30*time.Second, func() bool {
			resp, err = req.RequestWith(ctx, cl)
			return err == nil && len(resp.Topics) == len(ids) && !retriable(resp.Topics[0].Partitions[0].ErrorCode)
		}); err != nil {
			t.Fatalf("TxnOffsetCommit: %v %+v", err, resp)
		}
		if resp.Version != 6 {
			t.Fatalf("TxnOffsetCommit went as v%d, want v6", resp.Version)
		}
		return resp
	}

	// A member's commit to no group: nothing is verified or written.
	if resp := commit([][16]byte{inID}, "m", 3); resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("v6 member commit to no group: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	v5vs := kversion.V4_4_0()
	v5vs.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 5)
	cl5, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.MaxVersions(v5vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl5.Close()
	v5 := kmsg.NewPtrTxnOffsetCommitRequest()
	v5.TransactionalID, v5.Group, v5.ProducerID, v5.ProducerEpoch, v5.MemberID, v5.Generation = id, grp, init.ProducerID, init.ProducerEpoch, "m", 3
	v5rt := kmsg.NewTxnOffsetCommitRequestTopic()
	v5rt.Topic, v5rt.Partitions = "in", []kmsg.TxnOffsetCommitRequestTopicPartition{kmsg.NewTxnOffsetCommitRequestTopicPartition()}
	v5.Topics = append(v5.Topics, v5rt)
	var v5resp *kmsg.TxnOffsetCommitResponse
	if err := pollFor(30*time.Second, func() bool {
		v5resp, err = v5.RequestWith(ctx, cl5)
		return err == nil && len(v5resp.Topics) == 1 && !retriable(v5resp.Topics[0].Partitions[0].ErrorCode)
	}); err != nil || v5resp.Version != 5 || v5resp.Topics[0].Partitions[0].ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("v5 member commit to no group: %v %+v, want ILLEGAL_GENERATION", err, v5resp)
	}

	resp := commit([][16]byte{inID, unknownID}, "", -1)
	if got := resp.Topics[0]; got.TopicID != inID || got.Partitions[0].ErrorCode != 0 {
		t.Fatalf("v6 commit of in-0: %+v", got)
	}
	if got := resp.Topics[1]; got.TopicID != unknownID || got.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("v6 commit of an unknown topic id: %+v", got)
	}
	if end := endTxnV2(t, ctx, cl, id, init.ProducerID, init.ProducerEpoch, true); end.ErrorCode != 0 {
		t.Fatalf("EndTxn commit: %+v", end)
	}
	var off int64
	var code int16
	if err := pollFor(30*time.Second, func() bool {
		off, code = fetchStableOffset(t, ctx, cl, grp, "in", 0)
		return off == 7 && code == 0
	}); err != nil {
		t.Fatalf("in-0 after the COMMIT: %d %v, want 7", off, kerr.ErrorForCode(code))
	}
}
