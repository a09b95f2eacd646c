package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var tidA, tidB = topicID{0xa}, topicID{0xb}

func subscribedTo(ts ...string) map[string]bool {
	m := map[string]bool{}
	for _, t := range ts {
		m[t] = true
	}
	return m
}

func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	topics := []assignTopic{{name: "a", id: tidA, partitions: 7}}
	members := []assignMember{{id: "m1", topics: subscribedTo("a")}, {id: "m2", topics: subscribedTo("a")}}
	first := assignPartitions(assignorUniform, members, topics)
	if n1, n2 := first["m1"].count(), first["m2"].count(); n1+n2 != 7 || n1-n2 > 1 || n2-n1 > 1 {
		t.Fatalf("uniform over 7 and 2 members: %v", first)
	}
	members[0].prev, members[1].prev = first["m1"], first["m2"]
	members = append(members, assignMember{id: "m3", topics: subscribedTo("a")})
	second := assignPartitions(assignorUniform, members, topics)
	moved := 0
	for _, id := range []string{"m1", "m2"} {
		for _, p := range first[id][tidA] {
			if !second[id].has(tidA, p) {
				moved++
			}
		}
	}
	if c := second["m3"].count(); c != 2 || moved != 2 {
		t.Fatalf("a third member got %d partitions, %d moved; want 2 and 2 (sticky): %v -> %v", c, moved, first, second)
	}
}

func TestUniformAssignorHeterogeneousAndRack(t *testing.T) {
	topics := []assignTopic{{name: "a", id: tidA, partitions: 4, racks: [][]string{{"r1"}, {"r2"}, {"r1"}, {"r2"}}},
		{name: "b", id: tidB, partitions: 2}}
	members := []assignMember{{id: "m1", rack: "r2", topics: subscribedTo("a")}, {id: "m2", rack: "r1", topics: subscribedTo("a", "b")}}
	got := assignPartitions(assignorUniform, members, topics)
	if got["m2"][tidB] == nil || len(got["m2"][tidB]) != 2 || got["m1"].count() != 3 || got["m2"].count() != 3 {
		t.Fatalf("heterogeneous: %v", got)
	}
	if !got["m1"].has(tidA, 1) || !got["m1"].has(tidA, 3) {
		t.Errorf("m1 (rack r2) does not hold a's r2 partitions 1 and 3: %v", got)
	}
}

func TestRangeAssignor(t *testing.T) {
	topics := []assignTopic{{name: "a", id: tidA, partitions: 5}}
	members := []assignMember{{id: "m1", topics: subscribedTo("a")}, {id: "m2", topics: subscribedTo("a")}}
	got := assignPartitions(assignorRange, members, topics)
	if !got["m1"].equal(assignment{tidA: {0, 1, 2}}) || !got["m2"].equal(assignment{tidA: {3, 4}}) {
		t.Fatalf("range: %v", got)
	}
}

// heartbeat sends one heartbeat to g at its clock and returns the answer.
func (g *group) testHeartbeat(t *testing.T, h consumerHeartbeat) (*kmsg.ConsumerGroupHeartbeatResponse, int16) {
	t.Helper()
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	h.version = 1
	if h.topics == nil {
		h.topics = newTopicView([]TopicMeta{{Name: "a", ID: tidA, Partitions: 4}})
	}
	_, e := g.consumerHeartbeat(&h, resp)
	if e != nil {
		return resp, e.code
	}
	return resp, 0
}

func owned(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) assignment {
	out := assignment{}
	if a != nil {
		for _, t := range a.Topics {
			out.add(t.TopicID, t.Partitions...)
		}
	}
	return out
}

// TestConsumerReconciliationRevokesFirst: a partition moves to a new member
// only after its owner said it revoked it; the owner keeps its epoch until
// then, and the new member waits (UNRELEASED) meanwhile.
func TestConsumerReconciliationRevokesFirst(t *testing.T) {
	g := newGroup("g", &Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, ConsumerSessionTimeout: 10 * time.Second, ConsumerHeartbeatInterval: time.Second}, func([]record) (int64, error) { return 0, nil })
	g.now = time.Unix(100, 0)
	join := func(id string) consumerHeartbeat {
		return consumerHeartbeat{memberID: id, rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}}
	}
	r1, code := g.testHeartbeat(t, join("m1"))
	if code != 0 || r1.MemberEpoch != 1 || owned(r1.Assignment).count() != 4 {
		t.Fatalf("m1 joins: code %d, %+v", code, r1)
	}
	r2, _ := g.testHeartbeat(t, join("m2"))
	if r2.MemberEpoch != 2 || owned(r2.Assignment).count() != 0 {
		t.Fatalf("m2 joins while m1 owns everything: epoch %d, %v", r2.MemberEpoch, owned(r2.Assignment))
	}
	// m1 is told to revoke two partitions, keeping its epoch.
	all := owned(r1.Assignment)
	r1, _ = g.testHeartbeat(t, consumerHeartbeat{memberID: "m1", memberEpoch: 1, rebalanceTimeoutMs: -1, owned: all})
	if r1.MemberEpoch != 1 || owned(r1.Assignment).count() != 2 || g.consumer.members["m1"].state != memberUnrevoked {
		t.Fatalf("m1 asked to revoke: epoch %d, %v, state %v", r1.MemberEpoch, owned(r1.Assignment), g.consumer.members["m1"].state)
	}
	kept := owned(r1.Assignment)
	// m2 still gets nothing: m1 has not revoked.
	r2, _ = g.testHeartbeat(t, consumerHeartbeat{memberID: "m2", memberEpoch: 2, rebalanceTimeoutMs: -1, owned: assignment{}})
	if got := owned(r2.Assignment); got.count() != 0 {
		t.Fatalf("m2 got %v before m1 revoked", got)
	}
	// m1 says it revoked; m2 then gets the two partitions, none of m1's.
	r1, _ = g.testHeartbeat(t, consumerHeartbeat{memberID: "m1", memberEpoch: 1, rebalanceTimeoutMs: -1, owned: kept})
	if r1.MemberEpoch != 2 {
		t.Fatalf("m1 after revoking: epoch %d, want 2", r1.MemberEpoch)
	}
	r2, _ = g.testHeartbeat(t, consumerHeartbeat{memberID: "m2", memberEpoch: 2, rebalanceTimeoutMs: -1, owned: assignment{}})
	got := owned(r2.Assignment)
	if got.count() != 2 {
		t.Fatalf("m2 after m1 revoked: %v", got)
	}
	for _, p := range got[tidA] {
		if kept.has(tidA, p) {
			t.Fatalf("partition %d given to both members", p)
		}
	}
	if s := g.consumer.state(); s != "Stable" {
		t.Errorf("state %s, want Stable", s)
	}
	// A stale epoch is fenced; an unknown member is unknown.
	if _, code := g.testHeartbeat(t, consumerHeartbeat{memberID: "m2", memberEpoch: 9, rebalanceTimeoutMs: -1}); code != kerr.FencedMemberEpoch.Code {
		t.Errorf("epoch 9: code %d, want FENCED_MEMBER_EPOCH", code)
	}
	if _, code := g.testHeartbeat(t, consumerHeartbeat{memberID: "m9", memberEpoch: 2, rebalanceTimeoutMs: -1}); code != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: code %d, want UNKNOWN_MEMBER_ID", code)
	}
	// m1's session ends: it is fenced and the group epoch moves on.
	g.now = g.now.Add(11 * time.Second)
	g.consumer.members["m2"].expiresAt = g.now.Add(time.Hour)
	if recs := g.consumerTick(); len(recs) == 0 || g.consumer.members["m1"] != nil || g.consumer.epoch != 3 {
		t.Fatalf("after m1's session: %d records, members %v, epoch %d", len(recs), g.consumer.memberIDs(), g.consumer.epoch)
	}
}

// TestConsumerCommitRules: OffsetCommit v9 and TxnOffsetCommit against a
// consumer group's member epochs.
func TestConsumerCommitRules(t *testing.T) {
	cg := newConsumerGroup()
	m := &consumerMember{id: "m", epoch: 5, previousEpoch: 4, assigned: assignment{tidA: {0}}, pendingRevoke: assignment{tidA: {1}}}
	cg.members["m"] = m
	ids := map[string]topicID{"a": tidA}
	commit := func(epoch int32, version int16, txn bool, ps ...int32) int16 {
		cr := commitRequest{memberID: "m", generation: epoch, version: version, transactional: txn, topicIDs: ids}
		for _, p := range ps {
			cr.offsets = append(cr.offsets, commitOffset{tp: topicPartition{"a", p}})
		}
		return cg.validateCommit(cr)
	}
	for _, c := range []struct {
		name    string
		epoch   int32
		version int16
		txn     bool
		ps      []int32
		want    int16
	}{
		{"current epoch", 5, 9, false, []int32{0, 1, 2}, 0},
		{"below v9", 5, 8, false, []int32{0}, kerr.UnsupportedVersion.Code},
		{"transactional below v9", 5, 3, true, []int32{0}, 0},
		{"previous epoch, owned partitions", 4, 9, false, []int32{0, 1}, 0},
		{"previous epoch, a partition not owned", 4, 9, false, []int32{0, 2}, kerr.StaleMemberEpoch.Code},
		{"older epoch", 3, 9, false, []int32{0}, kerr.StaleMemberEpoch.Code},
		{"future epoch", 6, 9, false, []int32{0}, kerr.StaleMemberEpoch.Code},
	} {
		if got := commit(c.epoch, c.version, c.txn, c.ps...); got != c.want {
			t.Errorf("%s: code %d, want %d", c.name, got, c.want)
		}
	}
	if got := cg.validateCommit(commitRequest{memberID: "x", generation: 5, version: 9}); got != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: %d", got)
	}
	if got := cg.validateCommit(commitRequest{generation: -1, version: 9}); got != kerr.UnknownMemberID.Code {
		t.Errorf("simple commit to a group with members: %d", got)
	}
	if got := cg.validateFetch(fetchMember{id: "m", epoch: 4}); got != kerr.StaleMemberEpoch.Code {
		t.Errorf("OffsetFetch with epoch 4: %d", got)
	}
}

// TestConsumerGroupSnapshotReloads: the records of a compaction snapshot
// (liveRecords) rebuild the same consumer group.
func TestConsumerGroupSnapshotReloads(t *testing.T) {
	g := newGroup("g", &Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, ConsumerSessionTimeout: 10 * time.Second, ConsumerHeartbeatInterval: time.Second}, func([]record) (int64, error) { return 0, nil })
	g.now = time.Unix(100, 0)
	inst := "s1"
	for _, h := range []consumerHeartbeat{
		{memberID: "m1", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}},
		{memberID: "m2", instanceID: &inst, rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}},
	} {
		if _, code := g.testHeartbeat(t, h); code != 0 {
			t.Fatalf("join %s: %d", h.memberID, code)
		}
	}
	lc := newLoadedConsumer()
	for _, r := range g.consumer.liveRecords(g.id) {
		k, err := decodeKey(r.key)
		if err != nil {
			t.Fatal(err)
		}
		if err := lc.apply(k, r.value); err != nil {
			t.Fatal(err)
		}
	}
	got := lc.restore(g.now, g.limits, g.id)
	want := g.consumer
	if got.epoch != want.epoch || got.assignmentEpoch != want.assignmentEpoch || len(got.members) != 2 ||
		got.static[inst] != "m2" || len(got.owners) != len(want.owners) || !slices.Equal(got.subscription, want.subscription) {
		t.Fatalf("reloaded %+v, want %+v", got, want)
	}
	for id, m := range want.members {
		r := got.members[id]
		if r.epoch != m.epoch || r.state != m.state || !r.assigned.equal(m.assigned) || !r.target.equal(m.target) ||
			!slices.Equal(r.subscribedTopics, m.subscribedTopics) || r.rebalanceTimeoutMs != m.rebalanceTimeoutMs {
			t.Errorf("member %s reloaded as %+v, was %+v", id, r, m)
		}
	}
}

// TestConsumerHeartbeatBadInput: malformed heartbeats get Kafka's error
// codes and change nothing.
func TestConsumerHeartbeatBadInput(t *testing.T) {
	g := newGroup("g", &Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, ConsumerSessionTimeout: 10 * time.Second, ConsumerHeartbeatInterval: time.Second}, func([]record) (int64, error) { return 0, nil })
	g.now = time.Unix(100, 0)
	empty, bad, unknown := "", "(", "sticky"
	for _, c := range []struct {
		name string
		h    consumerHeartbeat
		want int16
	}{
		{"no member id", consumerHeartbeat{rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}, owned: assignment{}}, kerr.InvalidRequest.Code},
		{"no rebalance timeout on join", consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: -1, subscribedTopics: []string{"a"}, owned: assignment{}}, kerr.InvalidRequest.Code},
		{"no subscription on join", consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, owned: assignment{}}, kerr.InvalidRequest.Code},
		{"owned partitions on join", consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}, owned: assignment{tidA: {0}}}, kerr.InvalidRequest.Code},
		{"null owned partitions on join", consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}}, kerr.InvalidRequest.Code},
		{"empty rack", consumerHeartbeat{memberID: "m", rackID: &empty, rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}, owned: assignment{}}, kerr.InvalidRequest.Code},
		{"epoch below -2", consumerHeartbeat{memberID: "m", memberEpoch: -3}, kerr.InvalidRequest.Code},
		{"bad regex", consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, regex: &bad, owned: assignment{}}, kerr.InvalidRegularExpression.Code},
		{"unknown assignor", consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}, assignor: &unknown, owned: assignment{}}, kerr.UnsupportedAssignor.Code},
		{"heartbeat to no group", consumerHeartbeat{memberID: "m", memberEpoch: 3, rebalanceTimeoutMs: -1}, kerr.UnknownMemberID.Code},
		{"leave of no group", consumerHeartbeat{memberID: "m", memberEpoch: -1}, kerr.UnknownMemberID.Code},
	} {
		if _, code := g.testHeartbeat(t, c.h); code != c.want {
			t.Errorf("%s: code %d, want %d", c.name, code, c.want)
		}
		if g.consumer != nil {
			t.Fatalf("%s: the group became a consumer group", c.name)
		}
	}
	// A classic group with members of another protocol type than
	// "consumer" cannot be upgraded; a consumer group with members takes
	// no classic member whose subscription does not decode (the
	// migration itself: consumer_classic_test.go).
	g.members["classic-1"] = &member{id: "classic-1"}
	if _, code := g.testHeartbeat(t, consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}, owned: assignment{}}); code != kerr.GroupIDNotFound.Code {
		t.Errorf("join of a classic group: code %d, want GROUP_ID_NOT_FOUND", code)
	}
	delete(g.members, "classic-1")
	if _, code := g.testHeartbeat(t, consumerHeartbeat{memberID: "m", rebalanceTimeoutMs: 1, subscribedTopics: []string{"a"}, owned: assignment{}}); code != 0 {
		t.Fatalf("join: %d", code)
	}
	var got int16 = -1
	g.join(joinRequest{version: 9, memberID: "", clientID: "c", protocolType: "consumer", protocols: []protocol{{name: "range"}},
		sessionTimeout: 10 * time.Second, rebalanceTimeout: 10 * time.Second},
		&waiter{resp: kmsg.NewPtrJoinGroupResponse(), send: func(r kmsg.Response, _ int64) { got = r.(*kmsg.JoinGroupResponse).ErrorCode }})
	if got != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("classic join with no subscription of a consumer group with members: code %d, want INCONSISTENT_GROUP_PROTOCOL", got)
	}
}
