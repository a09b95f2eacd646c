package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/segment/batch"
)

func describe(t *testing.T, c *Coordinator, grp string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewDescribeGroupsRequest()
	req.Version, req.Groups = 5, []string{grp}
	return serve(t, c.handleDescribeGroups, &req, func(r *kmsg.DescribeGroupsResponse) int16 { return r.Groups[0].ErrorCode }).Groups[0]
}

// A coordinator that loads a partition brings back a Stable group with its
// members and assignments; a member that keeps heartbeating stays, one that
// does not expires after its session.
func TestLoadRestoresMembers(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)

	join := kmsg.NewJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "live", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 1000, 1000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("sub")}}
	code := func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode }
	first := serve(t, c.handleJoinGroup, &join, code)
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v", kerr.ErrorForCode(first.ErrorCode))
	}
	join.MemberID = first.MemberID
	joined := serve(t, c.handleJoinGroup, &join, code)
	if joined.ErrorCode != 0 || joined.LeaderID != joined.MemberID {
		t.Fatalf("join: %+v", joined)
	}
	sync := kmsg.NewSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 5, "live", joined.MemberID, joined.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: joined.MemberID, MemberAssignment: []byte("mine")}}
	if s := serve(t, c.handleSyncGroup, &sync, func(r *kmsg.SyncGroupResponse) int16 { return r.ErrorCode }); s.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	c.Close()

	c2 := newTestCoordinator(t, rep, 0)
	d := describe(t, c2, "live")
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != joined.MemberID ||
		string(d.Members[0].MemberAssignment) != "mine" || string(d.Members[0].ProtocolMetadata) != "sub" {
		t.Fatalf("restored: %+v", d)
	}
	hb := kmsg.NewHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "live", joined.MemberID, joined.Generation
	if r := serve(t, c2.handleHeartbeat, &hb, func(r *kmsg.HeartbeatResponse) int16 { return r.ErrorCode }); r.ErrorCode != 0 {
		t.Fatalf("heartbeat of a restored member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Silence: the session (1 s) runs out and the group empties.
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for describe(t, c2, "live").State != "Empty" {
		if time.Now().After(deadline) {
			t.Fatalf("restored member never expired: %+v", describe(t, c2, "live"))
		}
		<-tick.C
	}
}

// Records that are not a coordinator's (the topic is writable) are skipped
// at load, not fatal to the partition's groups.
func TestLoadSkipsForeignRecords(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)
	commitOne(t, c, "g", "t", 0, 5)
	c.Close()
	recs := []batch.Record{
		{Key: []byte("not a key"), Value: []byte("x")},
		{Key: offsetKey("g", topicPartition{"t", 1}), Value: []byte{0, 3, 1}}, // truncated value
		{OffsetDelta: 2, Key: offsetKey("g", topicPartition{"t", 2}), Value: offsetValue(offsetEntry{offset: 9})},
	}
	b, err := batch.Build(nil, batch.NoProducer(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rep.AppendLeader(b); err != nil {
		t.Fatal(err)
	}
	groups, skipped, err := readPartition(rep)
	if err != nil || skipped != 2 || len(groups["g"].offsets) != 2 {
		t.Fatalf("readPartition: %v skipped %d, groups %+v", err, skipped, groups)
	}
	c2 := newTestCoordinator(t, rep, 0)
	if got := fetchOne(t, c2, "g", "t", 0); got != 5 {
		t.Fatalf("t-0 at %d, want 5", got)
	}
	if got := fetchOne(t, c2, "g", "t", 2); got != 9 {
		t.Fatalf("t-2 at %d, want 9", got)
	}
}
