package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicA is the one topic of the migration tests: "a", 4 partitions.
var topicA = newTopicView([]TopicMeta{{Name: "a", ID: tidA, Partitions: 4}})

// classicSub is a ConsumerProtocolSubscription v3 of topic a; owned nil
// is an eager member's (no owned partitions).
func classicSub(owned []int32) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Topics, s.Generation = 3, []string{"a"}, -1
	if owned != nil {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = "a", owned
		s.OwnedPartitions = append(s.OwnedPartitions, op)
	}
	return s.AppendTo(nil)
}

func classicAssignment(ps ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	t := kmsg.NewConsumerMemberAssignmentTopic()
	t.Topic, t.Partitions = "a", ps
	a.Topics = append(a.Topics, t)
	return a.AppendTo(nil)
}

func decodedPartitions(t *testing.T, b []byte) []int32 {
	t.Helper()
	a := kmsg.NewConsumerMemberAssignment()
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment %x: %v", b, err)
	}
	var ps []int32
	for _, tp := range a.Topics {
		ps = append(ps, tp.Partitions...)
	}
	slices.Sort(ps)
	return ps
}

func (h *harness) classicJoin(memberID string, meta []byte) *kmsg.JoinGroupResponse {
	p := &pendingReply{}
	h.g.join(joinRequest{version: 9, memberID: memberID, clientID: "c", protocolType: "consumer",
		protocols: []protocol{{name: "range", metadata: meta}}, sessionTimeout: 3 * time.Second,
		rebalanceTimeout: 5 * time.Second, topics: topicA}, &waiter{resp: kmsg.NewPtrJoinGroupResponse(), send: p.send})
	if p.n != 1 {
		h.t.Fatalf("join of %s answered %d times", memberID, p.n)
	}
	return p.resp.(*kmsg.JoinGroupResponse)
}

func (h *harness) classicSync(memberID string, gen int32, assign map[string][]byte) *kmsg.SyncGroupResponse {
	p := &pendingReply{}
	h.g.sync(syncRequest{memberID: memberID, generation: gen, assignments: assign, topics: topicA},
		&waiter{resp: kmsg.NewPtrSyncGroupResponse(), send: p.send})
	if p.n != 1 {
		h.t.Fatalf("sync of %s answered %d times", memberID, p.n)
	}
	return p.resp.(*kmsg.SyncGroupResponse)
}

// heartbeat848 sends a ConsumerGroupHeartbeat and appends its records.
func (h *harness) heartbeat848(hb consumerHeartbeat) (*kmsg.ConsumerGroupHeartbeatResponse, int16) {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	hb.version, hb.topics = 1, topicA
	recs, e := h.g.consumerHeartbeat(&hb, resp)
	if len(recs) > 0 {
		h.g.persist(recs)
	}
	if e != nil {
		return resp, e.code
	}
	return resp, 0
}

// classicStable makes a classic group of two eager members: m1 owns a-0
// and a-1, m2 a-2 and a-3, at generation 2.
func classicStable(t *testing.T, h *harness) (m1, m2 string) {
	t.Helper()
	first := h.classicJoin("", classicSub(nil))
	m1 = first.MemberID
	if r := h.classicJoin(m1, classicSub(nil)); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("join of m1: %+v", r)
	}
	h.classicSync(m1, 1, map[string][]byte{m1: classicAssignment(0, 1, 2, 3)})
	m2 = h.classicJoin("", classicSub(nil)).MemberID
	p2 := &pendingReply{}
	h.g.join(joinRequest{version: 9, memberID: m2, clientID: "c", protocolType: "consumer",
		protocols: []protocol{{name: "range", metadata: classicSub(nil)}}, sessionTimeout: 3 * time.Second,
		rebalanceTimeout: 5 * time.Second, topics: topicA}, &waiter{resp: kmsg.NewPtrJoinGroupResponse(), send: p2.send})
	if r := h.classicJoin(m1, classicSub(nil)); r.ErrorCode != 0 || r.Generation != 2 {
		t.Fatalf("rejoin of m1: %+v", r)
	}
	ps := &pendingReply{}
	h.g.sync(syncRequest{memberID: m2, generation: 2}, &waiter{resp: kmsg.NewPtrSyncGroupResponse(), send: ps.send})
	h.classicSync(m1, 2, map[string][]byte{m1: classicAssignment(0, 1), m2: classicAssignment(2, 3)})
	if ps.n != 1 {
		t.Fatalf("m2's sync answered %d times", ps.n)
	}
	if h.g.state != StateStable || h.g.generation != 2 {
		t.Fatalf("classic group: %v gen %d", h.g.state, h.g.generation)
	}
	return m1, m2
}

// checkNoSharedPartition: no partition is held (assigned or pending
// revocation) by two members of the consumer group.
func checkNoSharedPartition(t *testing.T, cg *consumerGroup) {
	t.Helper()
	held := map[tidp]string{}
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		for _, a := range []assignment{m.assigned, m.pendingRevoke} {
			for tid, ps := range a {
				for _, p := range ps {
					if o, ok := held[tidp{tid, p}]; ok && o != id {
						t.Fatalf("partition %d held by %s and %s", p, o, id)
					}
					held[tidp{tid, p}] = id
				}
			}
		}
	}
}

// replay reads records the way load does and restores a group from them.
func replay(t *testing.T, recs []record, cfg *Config, now time.Time) *group {
	t.Helper()
	lg := &loadedGroup{offsets: map[topicPartition]offsetEntry{}, pendingTxn: map[int64]map[topicPartition]offsetEntry{}}
	for _, r := range recs {
		k, err := decodeKey(r.key)
		if err != nil {
			t.Fatalf("key %x: %v", r.key, err)
		}
		switch {
		case k.kind >= kindConsumerGroupMetadata:
			if lg.consumer == nil {
				lg.consumer = newLoadedConsumer()
			}
			if err := lg.consumer.apply(k, r.value); err != nil {
				t.Fatalf("record %x: %v", r.key, err)
			}
		case r.value == nil:
			lg.meta = nil
		default:
			if lg.meta, err = decodeGroupValue(r.value); err != nil {
				t.Fatalf("group value: %v", err)
			}
		}
	}
	if lg.consumer != nil && !lg.consumer.exists {
		lg.consumer = nil
	}
	g := newGroup("g", cfg, func([]record) (int64, error) { return 0, nil })
	restore(g, lg, now)
	return g
}

// TestClassicGroupUpgradeAndDowngrade: a consumer-protocol member joining
// a classic group converts it, the classic members keep their partitions
// and are moved through REBALANCE_IN_PROGRESS, rejoin and sync without
// ever sharing a partition; the group reloads from its records; the
// consumer-protocol member leaving converts it back.
func TestClassicGroupUpgradeAndDowngrade(t *testing.T) {
	h := newHarness(t)
	m1, m2 := classicStable(t, h)

	resp, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}})
	if code != 0 {
		t.Fatalf("consumer-protocol join of a classic group: code %d", code)
	}
	cg := h.g.consumer
	if cg == nil || len(h.g.members) != 0 {
		t.Fatalf("not converted: consumer %v, %d classic members", cg, len(h.g.members))
	}
	if cg.epoch != 3 || cg.assignmentEpoch != 3 || len(cg.members) != 3 {
		t.Fatalf("consumer group epoch %d/%d with %d members, want 3/3 with 3", cg.epoch, cg.assignmentEpoch, len(cg.members))
	}
	for id, want := range map[string][]int32{m1: {0, 1}, m2: {2, 3}} {
		m := cg.members[id]
		if m.classic == nil || m.epoch != 2 || !m.assigned.equal(assignment{tidA: want}) || !slices.Equal(m.subscribedTopics, []string{"a"}) {
			t.Fatalf("converted member %s: classic %v epoch %d assigned %v", id, m.classic, m.epoch, m.assigned)
		}
	}
	if resp.Assignment == nil || len(resp.Assignment.Topics) != 0 {
		t.Fatalf("the new member got partitions still owned by classic members: %+v", resp.Assignment)
	}
	checkNoSharedPartition(t, cg)

	// The classic members are asked to rejoin; m1 eager (owns nothing
	// when it joins), m2 cooperative (reports what it owns).
	if c := h.g.heartbeat(m1, nil, 2); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the upgrade: %d, want REBALANCE_IN_PROGRESS", c)
	}
	j1 := h.classicJoin(m1, classicSub(nil))
	if j1.ErrorCode != 0 || j1.Generation != 3 || j1.LeaderID == m1 {
		t.Fatalf("classic rejoin: %+v", j1)
	}
	s1 := h.classicSync(m1, 3, nil)
	got1 := decodedPartitions(t, s1.MemberAssignment)
	checkNoSharedPartition(t, cg)
	j2 := h.classicJoin(m2, classicSub([]int32{2, 3}))
	gen2 := j2.Generation
	s2 := h.classicSync(m2, gen2, nil)
	got2 := decodedPartitions(t, s2.MemberAssignment)
	checkNoSharedPartition(t, cg)
	if gen2 == 2 { // m2 had to revoke: it rejoins owning what it kept
		j2 = h.classicJoin(m2, classicSub(got2))
		if j2.Generation != 3 {
			t.Fatalf("rejoin after revoking: generation %d, want 3", j2.Generation)
		}
		got2 = decodedPartitions(t, h.classicSync(m2, 3, nil).MemberAssignment)
	}
	// The consumer-protocol member picks up what was released.
	resp, code = h.heartbeat848(consumerHeartbeat{memberID: "n", memberEpoch: resp.MemberEpoch, rebalanceTimeoutMs: -1})
	if code != 0 || resp.MemberEpoch != 3 {
		t.Fatalf("heartbeat of n: code %d epoch %d", code, resp.MemberEpoch)
	}
	checkNoSharedPartition(t, cg)
	n := cg.members["n"]
	if total := len(got1) + len(got2) + n.assigned.count(); total != 4 || n.assigned.count() == 0 {
		t.Fatalf("after the hand-over m1 %v, m2 %v, n %v", got1, got2, n.assigned)
	}
	if st := cg.state(); st != "Stable" {
		t.Fatalf("group %s, want Stable", st)
	}
	for _, id := range []string{m1, m2} {
		if c := h.g.heartbeat(id, nil, 3); c != 0 {
			t.Fatalf("heartbeat of %s once stable: %d", id, c)
		}
	}
	// A classic member commits with its generation.
	if c := cg.validateCommit(commitRequest{memberID: m1, generation: 2, version: 8}); c != kerr.IllegalGeneration.Code {
		t.Errorf("classic commit with an old generation: %d, want ILLEGAL_GENERATION", c)
	}
	if c := cg.validateCommit(commitRequest{memberID: m1, generation: 3, version: 8}); c != 0 {
		t.Errorf("classic commit: %d", c)
	}

	// Reloaded from its records, the group is the same.
	re := replay(t, h.written, &h.cfg, h.g.now)
	if re.consumer == nil || len(re.members) != 0 {
		t.Fatalf("reloaded: consumer %v, %d classic members", re.consumer, len(re.members))
	}
	for _, id := range cg.memberIDs() {
		a, b := cg.members[id], re.consumer.members[id]
		if b == nil || (a.classic == nil) != (b.classic == nil) || !a.classic.equal(b.classic) || a.epoch != b.epoch ||
			!a.assigned.equal(b.assigned) || !a.target.equal(b.target) || a.state != b.state {
			t.Fatalf("member %s reloaded as %+v, was %+v", id, b, a)
		}
	}
	if re.consumer.epoch != cg.epoch || re.consumer.assignmentEpoch != cg.assignmentEpoch {
		t.Fatalf("reloaded epochs %d/%d, want %d/%d", re.consumer.epoch, re.consumer.assignmentEpoch, cg.epoch, cg.assignmentEpoch)
	}

	// The last consumer-protocol member leaves: back to a classic group,
	// which rebalances at generation = group epoch.
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", memberEpoch: -1}); code != 0 {
		t.Fatalf("leave: %d", code)
	}
	if h.g.consumer != nil || len(h.g.members) != 2 || h.g.state != StatePreparingRebalance || h.g.generation != 3 || h.g.protocol != "range" {
		t.Fatalf("downgrade: consumer %v, %d members, %v gen %d protocol %q", h.g.consumer, len(h.g.members), h.g.state, h.g.generation, h.g.protocol)
	}
	if c := h.g.heartbeat(m1, nil, 3); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after the downgrade: %d, want REBALANCE_IN_PROGRESS", c)
	}
	re = replay(t, h.written, &h.cfg, h.g.now)
	if re.consumer != nil || len(re.members) != 2 || re.generation != 3 || re.protocolType != "consumer" {
		t.Fatalf("reloaded after the downgrade: consumer %v, %d members, gen %d", re.consumer, len(re.members), re.generation)
	}
	p := &pendingReply{}
	h.g.join(joinRequest{version: 9, memberID: m2, clientID: "c", protocolType: "consumer",
		protocols: []protocol{{name: "range", metadata: classicSub(nil)}}, sessionTimeout: 3 * time.Second,
		rebalanceTimeout: 5 * time.Second}, &waiter{resp: kmsg.NewPtrJoinGroupResponse(), send: p.send})
	if j := h.classicJoin(m1, classicSub(nil)); j.ErrorCode != 0 || j.Generation != 4 || p.n != 1 {
		t.Fatalf("classic rebalance after the downgrade: %+v (m2 answered %d)", j, p.n)
	}
}

// TestClassicMemberJoinsConsumerGroup: a new classic member joins a
// consumer group with members and leaves it through LeaveGroup.
func TestClassicMemberJoinsConsumerGroup(t *testing.T) {
	h := newHarness(t)
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}}); code != 0 {
		t.Fatal(code)
	}
	first := h.classicJoin("", classicSub(nil))
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %d", first.ErrorCode)
	}
	j := h.classicJoin(first.MemberID, classicSub(nil))
	cg := h.g.consumer
	if j.ErrorCode != 0 || cg == nil || cg.members[j.MemberID] == nil || cg.members[j.MemberID].classic == nil || cg.epoch != 2 {
		t.Fatalf("classic join of a consumer group: %+v", j)
	}
	if s := h.classicSync(j.MemberID, j.Generation, nil); s.ErrorCode != 0 {
		t.Fatalf("sync: %d", s.ErrorCode)
	}
	checkNoSharedPartition(t, cg)
	if c := h.g.heartbeat(j.MemberID, nil, j.Generation+1); c != kerr.IllegalGeneration.Code {
		t.Errorf("heartbeat with another generation: %d", c)
	}
	// The consumer-protocol member may not use the classic APIs.
	if c := h.g.heartbeat("n", nil, 2); c != kerr.UnknownMemberID.Code {
		t.Errorf("classic heartbeat of a consumer-protocol member: %d", c)
	}
	codes, _ := h.g.leave([]leaving{{memberID: j.MemberID}, {memberID: "n"}})
	if codes[0] != 0 || codes[1] != kerr.UnknownMemberID.Code || cg.members[j.MemberID] != nil || cg.epoch != 3 {
		t.Fatalf("leave: %v, epoch %d", codes, cg.epoch)
	}
}

// TestMigrationPolicy: disabled keeps Kafka's refusals; upgrade only
// keeps the consumer group when the consumer-protocol members are gone.
func TestMigrationPolicy(t *testing.T) {
	h := newHarness(t)
	h.cfg.ConsumerMigrationPolicy = MigrationDisabled
	classicStable(t, h)
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}}); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("upgrade with the policy disabled: %d, want GROUP_ID_NOT_FOUND", code)
	}
	if h.g.consumer != nil {
		t.Fatal("converted")
	}

	h = newHarness(t)
	h.cfg.ConsumerMigrationPolicy = MigrationUpgrade
	classicStable(t, h)
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}}); code != 0 {
		t.Fatalf("upgrade: %d", code)
	}
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", memberEpoch: -1}); code != 0 {
		t.Fatalf("leave: %d", code)
	}
	if h.g.consumer == nil || len(h.g.consumer.members) != 2 {
		t.Fatalf("downgraded although the policy is upgrade only")
	}
}
