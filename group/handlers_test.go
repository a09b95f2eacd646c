package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/coordinator"
)

// fakeCluster has the offsets topic once EnsureTopic ran; node 7 leads it.
type fakeCluster struct {
	created int
	live    int   // LiveBrokers
	rf      int16 // the replication factor of the last EnsureTopic
}

func (f *fakeCluster) EnsureTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	if name != OffsetsTopic || configs["cleanup.policy"] != "compact" {
		return kerr.InvalidRequest
	}
	f.created++
	f.rf = rf
	return nil
}

func (f *fakeCluster) LiveBrokers() int { return f.live }

func (f *fakeCluster) PartitionLeader(topic string, p int32) (coordinator.Broker, bool) {
	if f.created == 0 {
		return coordinator.Broker{}, false
	}
	return coordinator.Broker{NodeID: 7, Host: "h", Port: 9000 + p}, true
}

func TestFindCoordinatorVersions(t *testing.T) {
	fc := &fakeCluster{}
	c := New(Config{Logger: quietLogger()}, oneReplica{}, fc)
	defer c.Close()
	find := func(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
		return serve(t, c.handleFindCoordinator, req, func(*kmsg.FindCoordinatorResponse) int16 { return 0 })
	}
	// v0-v3: one key, answered at the top.
	v0 := kmsg.NewFindCoordinatorRequest()
	v0.Version, v0.CoordinatorKey = 0, "my-group"
	r0 := find(&v0)
	if r0.ErrorCode != 0 || r0.NodeID != 7 || r0.Port != 9000+PartitionFor("my-group", 50) || fc.created != 1 {
		t.Fatalf("v0: %+v (topic created %d times)", r0, fc.created)
	}
	// v4: a batch of keys, one answer each; a transaction key is not served.
	v4 := kmsg.NewFindCoordinatorRequest()
	v4.Version, v4.CoordinatorKeys = 4, []string{"a", "polygenelubricants"}
	r4 := find(&v4)
	if len(r4.Coordinators) != 2 || r4.Coordinators[0].Key != "a" || r4.Coordinators[0].Port != 9000+47 ||
		r4.Coordinators[1].Port != 9000 || r4.Coordinators[1].ErrorCode != 0 {
		t.Fatalf("v4: %+v", r4.Coordinators)
	}
	txn := kmsg.NewFindCoordinatorRequest()
	txn.Version, txn.CoordinatorType, txn.CoordinatorKeys = 4, 1, []string{"tx"}
	if r := find(&txn); r.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code || r.Coordinators[0].NodeID != -1 {
		t.Fatalf("transaction coordinator: %+v", r.Coordinators[0])
	}
}

func TestOffsetFetchForms(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)
	commitOne(t, c, "g1", "t", 0, 10)
	commitOne(t, c, "g1", "u", 2, 20)
	commitOne(t, c, "g2", "t", 1, 30)

	// v8: several groups; null topics means every committed offset.
	req := kmsg.NewOffsetFetchRequest()
	req.Version = 8
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = "g1"
	some := kmsg.NewOffsetFetchRequestGroup()
	some.Group = "g2"
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = "t", []int32{1, 5}
	some.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
	unknown := kmsg.NewOffsetFetchRequestGroup()
	unknown.Group = "nobody"
	unknown.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
	req.Groups = []kmsg.OffsetFetchRequestGroup{all, some, unknown}
	resp := serve(t, c.handleOffsetFetch, &req, func(r *kmsg.OffsetFetchResponse) int16 { return r.Groups[0].ErrorCode })
	g1 := resp.Groups[0]
	if len(g1.Topics) != 2 || g1.Topics[0].Topic != "t" || g1.Topics[0].Partitions[0].Offset != 10 ||
		g1.Topics[1].Topic != "u" || g1.Topics[1].Partitions[0].Offset != 20 {
		t.Fatalf("g1 (all): %+v", g1.Topics)
	}
	g2 := resp.Groups[1].Topics[0].Partitions
	if len(g2) != 2 || g2[0].Offset != 30 || g2[1].Offset != -1 {
		t.Fatalf("g2: %+v", g2)
	}
	if p := resp.Groups[2].Topics[0].Partitions[0]; resp.Groups[2].ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("unknown group: %+v", resp.Groups[2])
	}

	// v1: one group, errors per partition; a group of another partition
	// (none here: one offsets partition) is NOT_COORDINATOR.
	v1 := kmsg.NewOffsetFetchRequest()
	v1.Version, v1.Group = 1, "g1"
	t1 := kmsg.NewOffsetFetchRequestTopic()
	t1.Topic, t1.Partitions = "u", []int32{2}
	v1.Topics = []kmsg.OffsetFetchRequestTopic{t1}
	r1 := serve(t, c.handleOffsetFetch, &v1, func(r *kmsg.OffsetFetchResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	if p := r1.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 20 {
		t.Fatalf("v1: %+v", r1.Topics)
	}
}

func TestNotCoordinator(t *testing.T) {
	// A coordinator that leads no offsets partition answers NOT_COORDINATOR.
	c := New(Config{Logger: quietLogger()}, oneReplica{}, &fakeCluster{})
	defer c.Close()
	hb := kmsg.NewHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID = 4, "g", "m"
	r := serve(t, c.handleHeartbeat, &hb, func(r *kmsg.HeartbeatResponse) int16 { return r.ErrorCode })
	if r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestJoinBeforeKIP394(t *testing.T) {
	// v3 and older: a join without a member id joins at once.
	h := newHarness(t)
	r := joinResp(t, h.join(3, "", nil, "a"))
	if r.ErrorCode != 0 || r.MemberID == "" || r.Generation != 1 || r.LeaderID != r.MemberID {
		t.Fatalf("v3 join: %+v", r)
	}
	// A different protocol type, or no common protocol, is refused.
	p := &pendingReply{}
	req := kmsg.NewJoinGroupRequest()
	h.g.join(joinRequest{version: 3, protocolType: "connect", protocols: []protocol{{name: "range"}},
		sessionTimeout: h.cfg.MinSessionTimeout}, &waiter{resp: req.ResponseKind(), send: p.send})
	if code := p.resp.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("other protocol type: %v", kerr.ErrorForCode(code))
	}
	h.g.join(joinRequest{version: 3, protocolType: "consumer", protocols: []protocol{{name: "range"}},
		sessionTimeout: 1}, &waiter{resp: req.ResponseKind(), send: p.send})
	if code := p.resp.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("tiny session timeout: %v", kerr.ErrorForCode(code))
	}
}

func TestRefusedRequestsLeaveNoGroup(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)
	join := kmsg.NewJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType, join.SessionTimeoutMillis = 9, "bad", "consumer", 1
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	r := serve(t, c.handleJoinGroup, &join, func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode })
	if r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	commitOne(t, c, "kept", "t", 0, 1)
	list := kmsg.NewListGroupsRequest()
	list.Version = 4
	lr := serve(t, c.handleListGroups, &list, func(r *kmsg.ListGroupsResponse) int16 { return r.ErrorCode })
	if len(lr.Groups) != 1 || lr.Groups[0].Group != "kept" || lr.Groups[0].GroupState != "Empty" {
		t.Fatalf("ListGroups after a refused join: %+v", lr.Groups)
	}
}

// DescribeGroups v6 and DeleteGroups v3 (KIP-1043): an unknown group is
// GROUP_ID_NOT_FOUND with a message naming it (DescribeGroups before v6
// describes it Dead without an error), and DeleteGroups' errors carry
// messages; a success has none.
func TestGroupErrorMessages(t *testing.T) {
	rep := openOffsetsReplica(t, t.TempDir())
	t.Cleanup(func() { rep.Close() })
	c := newTestCoordinator(t, rep, 0)

	describeAt := func(v int16, grp string) kmsg.DescribeGroupsResponseGroup {
		t.Helper()
		req := kmsg.NewDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{grp}
		resp := serve(t, c.handleDescribeGroups, &req, func(r *kmsg.DescribeGroupsResponse) int16 { return r.Groups[0].ErrorCode })
		if len(resp.Groups) != 1 || resp.Groups[0].Group != grp {
			t.Fatalf("describe v%d %s: %+v", v, grp, resp.Groups)
		}
		return resp.Groups[0]
	}
	deleteAt := func(v int16, grp string) kmsg.DeleteGroupsResponseGroup {
		t.Helper()
		req := kmsg.NewDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{grp}
		resp := serve(t, c.handleDeleteGroups, &req, func(r *kmsg.DeleteGroupsResponse) int16 { return r.Groups[0].ErrorCode })
		if len(resp.Groups) != 1 || resp.Groups[0].Group != grp {
			t.Fatalf("delete v%d %s: %+v", v, grp, resp.Groups)
		}
		return resp.Groups[0]
	}
	msg := func(s *string) string {
		if s == nil {
			return "<nil>"
		}
		return *s
	}

	if g := describeAt(5, "nope"); g.ErrorCode != 0 || g.State != "Dead" || g.ErrorMessage != nil {
		t.Fatalf("v5 unknown group: code %d state %q message %s", g.ErrorCode, g.State, msg(g.ErrorMessage))
	}
	if g := describeAt(6, "nope"); g.ErrorCode != kerr.GroupIDNotFound.Code || g.State != "Dead" || msg(g.ErrorMessage) != "Group nope not found." {
		t.Fatalf("v6 unknown group: code %d state %q message %s", g.ErrorCode, g.State, msg(g.ErrorMessage))
	}

	join := kmsg.NewJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "live", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("sub")}}
	code := func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode }
	join.MemberID = serve(t, c.handleJoinGroup, &join, code).MemberID
	if joined := serve(t, c.handleJoinGroup, &join, code); joined.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(joined.ErrorCode))
	}
	if g := describeAt(6, "live"); g.ErrorCode != 0 || g.ErrorMessage != nil || len(g.Members) != 1 || g.State == "Dead" {
		t.Fatalf("v6 live group: code %d state %q message %s members %d", g.ErrorCode, g.State, msg(g.ErrorMessage), len(g.Members))
	}

	if g := deleteAt(3, "live"); g.ErrorCode != kerr.NonEmptyGroup.Code || msg(g.ErrorMessage) != "Group live is not empty." {
		t.Fatalf("v3 delete of a live group: code %d message %s", g.ErrorCode, msg(g.ErrorMessage))
	}
	if g := deleteAt(2, "live"); g.ErrorCode != kerr.NonEmptyGroup.Code || g.ErrorMessage != nil {
		t.Fatalf("v2 delete of a live group: code %d message %s", g.ErrorCode, msg(g.ErrorMessage))
	}
	if g := deleteAt(3, "nope"); g.ErrorCode != kerr.GroupIDNotFound.Code || msg(g.ErrorMessage) != "Group nope not found." {
		t.Fatalf("v3 delete of an unknown group: code %d message %s", g.ErrorCode, msg(g.ErrorMessage))
	}
	commitOne(t, c, "idle", "t", 0, 5)
	if g := deleteAt(3, "idle"); g.ErrorCode != 0 || g.ErrorMessage != nil {
		t.Fatalf("v3 delete of an empty group: code %d message %s", g.ErrorCode, msg(g.ErrorMessage))
	}
	if g := describeAt(6, "idle"); g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("v6 describe of a deleted group: code %d state %q", g.ErrorCode, g.State)
	}
}
