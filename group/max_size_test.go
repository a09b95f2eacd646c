package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// group.consumer.max.size: a member the consumer group does not have is
// refused GROUP_MAX_SIZE_REACHED once the group is full, whatever the
// protocol it joins with; its members heartbeat on, and a member that
// left makes room. A classic group is upgraded only if the joining
// member fits (Kafka's validateOnlineUpgrade and throwIfConsumerGroupIsFull).
func TestConsumerGroupMaxSize(t *testing.T) {
	h := newHarness(t)
	h.cfg.ConsumerMaxSize = 2
	join := func(id string) (int32, int16) {
		resp, code := h.heartbeat848(consumerHeartbeat{memberID: id, rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}})
		return resp.MemberEpoch, code
	}
	epochA, code := join("ma")
	if code != 0 {
		t.Fatal(code)
	}
	if _, code := join("mb"); code != 0 {
		t.Fatal(code)
	}
	if _, code := join("mc"); code != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("a third member of a group of max size 2: %v", kerr.ErrorForCode(code))
	}
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "mc", memberEpoch: -1}); code != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("a leave of a member the full group does not have: %v", kerr.ErrorForCode(code))
	}
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "ma", memberEpoch: epochA, rebalanceTimeoutMs: -1}); code != 0 {
		t.Fatalf("a member of the full group heartbeats: %v", kerr.ErrorForCode(code))
	}
	if j := h.classicJoin("", classicSub(nil)); j.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("a classic member joining the full consumer group: %v", kerr.ErrorForCode(j.ErrorCode))
	}
	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "mb", memberEpoch: -1}); code != 0 {
		t.Fatal(code)
	}
	if _, code := join("mc"); code != 0 {
		t.Fatalf("a member joining once another left: %v", kerr.ErrorForCode(code))
	}
	if n := len(h.g.consumer.members); n != 2 {
		t.Fatalf("%d members, want 2", n)
	}
}

func TestClassicGroupUpgradeMaxSize(t *testing.T) {
	for _, c := range []struct {
		max  int
		want int16
	}{{1, kerr.GroupIDNotFound.Code}, {2, kerr.GroupMaxSizeReached.Code}, {3, 0}} {
		h := newHarness(t)
		h.cfg.ConsumerMaxSize = c.max
		classicStable(t, h) // two classic members
		from := len(h.written)
		_, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}})
		if code != c.want {
			t.Fatalf("max size %d: a consumer-protocol member joining two classic members: %v, want %v", c.max, kerr.ErrorForCode(code), kerr.ErrorForCode(c.want))
		}
		if upgraded := h.g.consumer != nil; upgraded != (c.want == 0) || (c.want != 0 && len(h.written) != from) {
			t.Fatalf("max size %d: upgraded %v, %d records written", c.max, upgraded, len(h.written)-from)
		}
	}
}
