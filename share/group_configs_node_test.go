package share_test

import (
	"context"
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

// shareFetcher is one share group member speaking ShareFetch and
// ShareAcknowledge over raw kmsg on one connection (which stays open, so
// the broker never releases its records for a disconnect).
type shareFetcher struct {
	t       *testing.T
	cl      *kgo.Client
	group   string
	member  string
	topicID [16]byte
	epoch   int32
}

// fetch sends one ShareFetch of partition 0 and returns the answer's lock
// timeout and the ranges acquired.
func (f *shareFetcher) fetch(ctx context.Context) (int32, []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) {
	f.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(f.group), kmsg.StringPtr(f.member), f.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 200, 1, 1<<20, 100, 100
	if f.epoch == 0 {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = f.topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		f.t.Fatalf("ShareFetch at session epoch %d: %v", f.epoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	f.epoch++
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				f.t.Fatalf("ShareFetch partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			out = append(out, rp.AcquiredRecords...)
		}
	}
	return resp.AcquisitionLockTimeoutMillis, out
}

// acknowledge sends one ShareAcknowledge of type typ for offsets
// first..last of partition 0.
func (f *shareFetcher) acknowledge(ctx context.Context, first, last int64, typ int8) {
	f.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(f.group), kmsg.StringPtr(f.member), f.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = f.topicID
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		f.t.Fatalf("ShareAcknowledge: %+v", resp)
	}
	f.epoch++
}

// TestShareGroupConfigs: KIP-932 group configs on a real node, over raw
// kmsg. A share group's share.auto.offset.reset=earliest starts it at the
// log start (the node's default is latest), its share.heartbeat.interval.ms
// is what ShareGroupHeartbeat answers, its share.record.lock.duration.ms
// (2 s; the node's is 60 s) is the lock ShareFetch answers and the one
// its records are held for (a record not acknowledged is acquired again
// with delivery count 2 well within the node's lock), a new lock duration
// is answered by the next ShareFetch, and share.delivery.count.limit=2
// (the node's is 5) archives a record released at its second delivery.
// DeleteGroups deletes the group's configs. Before, every setting was the
// node's.
func TestShareGroupConfigs(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.GroupShareRecordLockDuration = 60 * time.Second
		c.GroupShareMinRecordLockDuration = time.Second
		c.ShareAutoOffsetReset = "latest"
	})
	ctx := proctest.Context(t, 120*time.Second)
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	testnode.CreateTopic(t, adm, "share-cfg", 1)
	testnode.ProduceN(t, n.KafkaAddr(), "share-cfg", 5, "r")
	td, err := adm.ListTopics(ctx, "share-cfg")
	if err != nil || td["share-cfg"].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td["share-cfg"].Err)
	}
	const group = "share-cfg-g"
	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, group, false,
		testnode.SetConfigOp("share.auto.offset.reset", "earliest"), testnode.SetConfigOp("share.record.lock.duration.ms", "2000"),
		testnode.SetConfigOp("share.delivery.count.limit", "2"), testnode.SetConfigOp("share.heartbeat.interval.ms", "6000")); code != 0 {
		t.Fatalf("alter: %v %q", kerr.ErrorForCode(code), msg)
	}

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, "share-member-1", 0, []string{"share-cfg"}
	hbResp, err := hb.RequestWith(ctx, cl)
	if err != nil || hbResp.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat: %v %+v", err, hbResp)
	}
	if hbResp.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("ShareGroupHeartbeat interval %d, want the group's 6000", hbResp.HeartbeatIntervalMillis)
	}

	f := &shareFetcher{t: t, cl: cl, group: group, member: "share-member-1", topicID: td["share-cfg"].ID}
	// wantAll polls ShareFetch until offsets 0-4 were acquired with
	// delivery count want.
	wantAll := func(want int16, within time.Duration) int32 {
		t.Helper()
		got := map[int64]int16{}
		var lock int32
		if err := proctest.Poll(within, 10*time.Millisecond, func() bool {
			var recs []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
			lock, recs = f.fetch(ctx)
			for _, r := range recs {
				for o := r.FirstOffset; o <= r.LastOffset; o++ {
					got[o] = r.DeliveryCount
				}
			}
			for o := range int64(5) {
				if got[o] != want {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatalf("offsets 0-4 not all acquired with delivery count %d: %v", want, got)
		}
		return lock
	}
	if lock := wantAll(1, 20*time.Second); lock != 2000 {
		t.Fatalf("ShareFetch lock %d, want the group's 2000", lock)
	}
	// Not acknowledged: the group's 2 s lock expires and the records are
	// acquired again, long before the node's 60 s would let them.
	wantAll(2, 20*time.Second)

	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, group, false, testnode.SetConfigOp("share.record.lock.duration.ms", "3000")); code != 0 {
		t.Fatalf("alter the lock: %v %q", kerr.ErrorForCode(code), msg)
	}
	if lock, _ := f.fetch(ctx); lock != 3000 {
		t.Fatalf("ShareFetch lock after the alteration %d, want 3000", lock)
	}
	// Released at their second delivery, with the group's limit of 2 the
	// records are archived: the share-partition starts after them.
	f.acknowledge(ctx, 0, 4, 2)
	if p := shareOffsets(t, cl, group, "share-cfg", 1); len(p) != 1 || p[0].StartOffset != 5 {
		t.Fatalf("start offset after releasing at the delivery limit: %+v, want 5", p)
	}

	hb.MemberEpoch = -1
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	if dr, err := adm.DeleteGroup(ctx, group); err != nil || dr.Err != nil {
		t.Fatalf("DeleteGroup: %v %v", err, dr.Err)
	}
	if vals, srcs, _ := testnode.DescribeGroupConfigs(t, ctx, cl, group); vals["share.record.lock.duration.ms"] != "60000" ||
		srcs["share.record.lock.duration.ms"] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("configs of a deleted share group: %v %v", vals, srcs)
	}
}
