package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/partition"
)

// shareGroupsSeen records what the coordinator hands to ShareGroups.
type shareGroupsSeen struct {
	mu     sync.Mutex
	loaded map[string][]ShareRecord
}

func (s *shareGroupsSeen) ListShareGroups() []ShareGroupListing { return nil }
func (s *shareGroupsSeen) DeleteShareGroup(string) (bool, bool, error) {
	return false, false, nil
}
func (s *shareGroupsSeen) LoadShareGroups(_ int32, gs map[string][]ShareRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loaded = gs
}
func (s *shareGroupsSeen) UnloadShareGroups(int32) {}

// appendShare appends recs for grp, retrying while the partition loads.
func appendShare(t *testing.T, c *Coordinator, grp string, recs ...ShareRecord) {
	t.Helper()
	var err error
	if perr := proctest.Poll(20*time.Second, 10*time.Millisecond, func() bool {
		err = c.AppendShareRecords(context.Background(), grp, recs)
		return !errors.Is(err, ErrLoadInProgress)
	}); perr != nil || err != nil {
		t.Fatal(perr, err)
	}
}

// A share group's records are kept per key (a tombstone deletes), survive
// a compaction, come back to ShareGroups when the partition loads again,
// and the group is not a classic group (ListGroups and DescribeGroups).
func TestShareRecordsCompactAndLoad(t *testing.T) {
	dir := t.TempDir()
	rep := openOffsetsReplica(t, dir)
	c := newTestCoordinator(t, rep, 1<<40)
	c.SetShareGroups(&shareGroupsSeen{})
	meta, member := consumerKey(11, "sg"), consumerKey(keyShareMember, "sg", "m1")
	appendShare(t, c, "sg", ShareRecord{Key: meta, Value: []byte("epoch-1")}, ShareRecord{Key: member, Value: []byte("m1")})
	appendShare(t, c, "sg", ShareRecord{Key: member}, ShareRecord{Key: meta, Value: []byte("epoch-2")})
	if err := c.AppendShareRecords(context.Background(), "sg", []ShareRecord{{Key: offsetKey("sg", topicPartition{"t", 0})}}); err == nil {
		t.Fatal("an offset key appended as a share record")
	}
	if err := c.AppendShareRecords(context.Background(), "sg", []ShareRecord{{Key: consumerKey(11, "other")}}); err == nil {
		t.Fatal("another group's key appended")
	}
	commitOne(t, c, "cg", "t", 0, 3)
	if lg := listGroupsOnce(t, c); len(lg.Groups) != 1 || lg.Groups[0].Group != "cg" {
		t.Fatalf("ListGroups lists the share group as a classic one: %+v", lg.Groups)
	}
	if d := describe(t, c, "sg"); d.State != StateDead.String() {
		t.Fatalf("DescribeGroups of the share group: %+v", d)
	}

	sh, ok := c.rt.Loaded(0)
	if !ok || !sh.compacting.CompareAndSwap(false, true) {
		t.Fatal("partition 0 not loaded, or compacting")
	}
	if err := c.compact(context.Background(), sh); err != nil {
		t.Fatal(err)
	}
	if total, byGroup := logRecords(t, rep); total != 2 || byGroup["sg"] != 1 {
		t.Fatalf("after compaction: %d records %v, want the share group's metadata and cg's offset", total, byGroup)
	}

	c.Close()
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	rep2 := openOffsetsReplica(t, dir)
	t.Cleanup(func() { rep2.Close() })
	c2 := newTestCoordinator(t, rep2, 1<<40)
	seen := &shareGroupsSeen{}
	c2.SetShareGroups(seen)
	var err error
	if perr := proctest.Poll(20*time.Second, 10*time.Millisecond, func() bool {
		err = c2.ShareReady("sg")
		return !errors.Is(err, ErrLoadInProgress)
	}); perr != nil || err != nil {
		t.Fatal(perr, err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	got := seen.loaded["sg"]
	if len(seen.loaded) != 1 || len(got) != 1 || !bytes.Equal(got[0].Key, meta) || string(got[0].Value) != "epoch-2" {
		t.Fatalf("loaded share groups: %+v", seen.loaded)
	}
}

// A share group's id is refused by the classic and consumer group APIs,
// as Kafka's: JoinGroup INCONSISTENT_GROUP_PROTOCOL, ConsumerGroupHeartbeat,
// OffsetCommit, OffsetFetch and OffsetDelete GROUP_ID_NOT_FOUND (Kafka's
// ShareGroup.validateOffset*; TxnOffsetCommit too, in txnCommit); the
// group stays a share group.
func TestShareGroupRefusedByOtherProtocols(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 1<<40)
	c.SetShareGroups(&shareGroupsSeen{})
	appendShare(t, c, "sg", ShareRecord{Key: consumerKey(11, "sg"), Value: []byte("epoch-1")})

	join := kmsg.NewJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "sg", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 6000, 6000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("sub")}}
	if r := serve(t, c.handleJoinGroup, &join, func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode }); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("JoinGroup: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	hb := kmsg.NewConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = 1, "sg", "m-1", 0, 6000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := serve(t, c.handleConsumerGroupHeartbeat, &hb, func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode }); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ConsumerGroupHeartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	commit := kmsg.NewOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "sg", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if r := serve(t, c.handleOffsetCommit, &commit, func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }); r.Topics[0].Partitions[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("OffsetCommit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	fetch := kmsg.NewOffsetFetchRequest()
	fetch.Version = 8
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "sg"}}
	if r := serve(t, c.handleOffsetFetch, &fetch, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode }); r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("OffsetFetch: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	del := kmsg.NewOffsetDeleteRequest()
	del.Group = "sg"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if r := serve(t, c.handleOffsetDelete, &del, func(r *kmsg.OffsetDeleteResponse) int16 { return r.ErrorCode }); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("OffsetDelete: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if lg := listGroupsOnce(t, c); len(lg.Groups) != 0 {
		t.Errorf("the share group became a classic or consumer group: %+v", lg.Groups)
	}
}

// TestErrorCodes: the group coordinator's codes put its own errors and
// the runtime's over the node's table, each wrapped as the coordinator
// wraps it.
func TestErrorCodes(t *testing.T) {
	for err, want := range map[error]*kerr.Error{
		ErrLoadInProgress: kerr.CoordinatorLoadInProgress,
		ErrClosed:         kerr.NotCoordinator,
		fmt.Errorf("%w: %q", ErrNotShareGroup, "g"):                                                                 kerr.GroupIDNotFound,
		fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, OffsetsTopic, 3, partition.ErrDiskFull):         kerr.NotCoordinator,
		fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, OffsetsTopic, partition.ErrNotEnoughReplicas): kerr.CoordinatorNotAvailable,
	} {
		if got := errorCode(err); got != want.Code {
			t.Errorf("errorCode(%v) = %v, want %v", err, kerr.ErrorForCode(got), want)
		}
	}
}
