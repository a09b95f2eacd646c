package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClassicMembersTimersInConsumerGroup: an upgrade answers the joins a
// classic rebalance held; a classic member that does not rejoin within
// its rebalance timeout after REBALANCE_IN_PROGRESS is fenced; the
// consumer-protocol member's session ending downgrades the group.
func TestClassicMembersTimersInConsumerGroup(t *testing.T) {
	h := newHarness(t)
	m1, m2 := classicStable(t, h)
	// m2 starts a rebalance that m1 has not joined yet: its join is held.
	held := &pendingReply{}
	h.g.join(joinRequest{version: 9, memberID: m2, clientID: "c", protocolType: "consumer",
		protocols: []protocol{{name: "range", metadata: classicSub([]int32{2})}}, sessionTimeout: 3 * time.Second,
		rebalanceTimeout: 5 * time.Second, topics: topicA}, &waiter{resp: kmsg.NewPtrJoinGroupResponse(), send: held.send})
	if held.n != 0 || h.g.state != StatePreparingRebalance {
		t.Fatalf("join held %d, state %v", held.n, h.g.state)
	}
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}}); code != 0 {
		t.Fatalf("upgrade during a rebalance: %d", code)
	}
	if held.n != 1 || held.resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("held join answered %d times: %+v", held.n, held.resp)
	}
	cg := h.g.consumer
	// m1 is told to rejoin and never does; m2 rejoins and syncs.
	if c := h.g.heartbeat(m1, nil, 2); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat: %d", c)
	}
	j := h.classicJoin(m2, classicSub(nil))
	h.classicSync(m2, j.Generation, nil)
	for range 4 { // m2 and n keep their sessions; m1's rejoin deadline (5 s) passes
		h.advance(1500 * time.Millisecond)
		h.g.heartbeat(m2, nil, cg.members[m2].epoch)
		h.heartbeat848(consumerHeartbeat{memberID: "n", memberEpoch: cg.members["n"].epoch, rebalanceTimeoutMs: -1})
	}
	if cg.members[m1] != nil || cg.members[m2] == nil || h.g.consumer != cg {
		t.Fatalf("after m1's rejoin deadline: m1 %v, m2 %v", cg.members[m1], cg.members[m2])
	}
	// n stops heartbeating: its session ends and the group is classic
	// again, with m2.
	for range 60 { // n's session is the default 45 s
		h.advance(time.Second)
		if h.g.consumer == nil {
			break
		}
		if c := h.g.heartbeat(m2, nil, cg.members[m2].epoch); c == kerr.RebalanceInProgress.Code {
			j := h.classicJoin(m2, classicSub(nil))
			h.classicSync(m2, j.Generation, nil)
		}
	}
	if h.g.consumer != nil || len(h.g.members) != 1 || h.g.members[m2] == nil || h.g.state != StatePreparingRebalance {
		t.Fatalf("after n's session: consumer %v, members %d, %v", h.g.consumer, len(h.g.members), h.g.state)
	}
	re := replay(t, h.written, &h.cfg, h.g.now)
	if re.consumer != nil || len(re.members) != 1 {
		t.Fatalf("reloaded after the downgrade: consumer %v, %d members", re.consumer, len(re.members))
	}
}
