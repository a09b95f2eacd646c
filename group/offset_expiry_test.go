package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const testRetention = 10 * time.Minute

// setOffset puts a replicated commit of tp made at ts into h's group.
func (h *harness) setOffset(topic string, p int32, ts time.Time) {
	h.g.offsets[topicPartition{topic, p}] = offsetEntry{offset: 5, leaderEpoch: -1, commitTimestamp: ts.UnixMilli()}
}

// expireAt runs a retention check at t and returns the offsets it
// tombstoned (sorted "topic-p") and whether the group was deleted.
func (h *harness) expireAt(t time.Time) ([]string, bool) {
	h.t.Helper()
	from := len(h.written)
	h.g.now = t
	n, deleted := h.g.expireOffsets(testRetention)
	var gone []string
	groupTombstone := false
	for _, r := range h.written[from:] {
		k, err := decodeKey(r.key)
		if err != nil {
			h.t.Fatal(err)
		}
		if r.value != nil {
			h.t.Fatalf("the check wrote a value for %+v", k)
		}
		switch k.kind {
		case kindOffset:
			gone = append(gone, k.tp.topic+"-"+string(rune('0'+k.tp.partition)))
		case kindGroup:
			groupTombstone = true
		}
	}
	if n != len(gone) || deleted != groupTombstone {
		h.t.Fatalf("check reported %d expired, deleted %v; wrote %v, group tombstone %v", n, deleted, gone, groupTombstone)
	}
	slices.Sort(gone)
	return gone, deleted
}

func expectExpired(t *testing.T, gone []string, deleted bool, want []string, wantDeleted bool) {
	t.Helper()
	if !slices.Equal(gone, want) || deleted != wantDeleted {
		t.Fatalf("expired %v (group deleted %v), want %v (%v)", gone, deleted, want, wantDeleted)
	}
}

// A group with no protocol type (standalone commits): each offset expires
// retention after its commit; the group goes with the last one.
func TestOffsetExpiryStandalone(t *testing.T) {
	h := newHarness(t)
	t0 := h.g.now
	h.setOffset("a", 0, t0)
	h.setOffset("a", 1, t0.Add(5*time.Minute))

	gone, deleted := h.expireAt(t0.Add(testRetention - time.Millisecond))
	expectExpired(t, gone, deleted, nil, false)
	gone, deleted = h.expireAt(t0.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"a-0"}, false)
	if _, ok := h.g.offsets[topicPartition{"a", 1}]; !ok || len(h.g.offsets) != 1 {
		t.Fatalf("offsets after the first expiry: %v", h.g.offsets)
	}
	gone, deleted = h.expireAt(t0.Add(5*time.Minute + testRetention))
	expectExpired(t, gone, deleted, []string{"a-1"}, true)
	if h.g.state != StateDead || len(h.g.offsets) != 0 {
		t.Fatalf("after the last expiry: state %v offsets %v", h.g.state, h.g.offsets)
	}
}

// A classic consumer group: while Stable, only offsets of topics no member
// subscribes to expire (from their commit); once Empty, every offset
// expires retention after the group became empty, however old its commit,
// and the group is deleted with the last one. While it rebalances nothing
// expires.
func TestOffsetExpiryClassicGroup(t *testing.T) {
	h := newHarness(t)
	old := h.g.now.Add(-time.Hour)
	classicStable(t, h) // members subscribe to topic a
	h.setOffset("a", 0, old)
	h.setOffset("b", 0, old)

	gone, deleted := h.expireAt(h.g.now)
	expectExpired(t, gone, deleted, []string{"b-0"}, false)

	// A rebalance: nothing expires.
	m3 := h.classicJoin("", classicSub(nil)).MemberID
	p := &pendingReply{}
	h.g.join(joinRequest{version: 9, memberID: m3, clientID: "c", protocolType: "consumer",
		protocols: []protocol{{name: "range", metadata: classicSub(nil)}}, sessionTimeout: 3 * time.Second,
		rebalanceTimeout: 5 * time.Second, topics: topicA}, &waiter{resp: kmsg.NewPtrJoinGroupResponse(), send: p.send})
	h.g.offsets[topicPartition{"c", 0}] = offsetEntry{offset: 1, commitTimestamp: old.UnixMilli()}
	if h.g.state == StateStable {
		t.Fatal("the group did not start rebalancing")
	}
	gone, deleted = h.expireAt(h.g.now)
	expectExpired(t, gone, deleted, nil, false)

	// Every member's session ends: the group is Empty from then.
	var emptySince time.Time
	for range 20 {
		h.advance(time.Second)
		if h.g.state == StateEmpty && emptySince.IsZero() {
			emptySince = h.g.now
		}
	}
	if h.g.state != StateEmpty || len(h.g.members) != 0 {
		t.Fatalf("state %v with %d members, want Empty", h.g.state, len(h.g.members))
	}
	gone, deleted = h.expireAt(emptySince.Add(testRetention - time.Millisecond))
	expectExpired(t, gone, deleted, nil, false)
	gone, deleted = h.expireAt(emptySince.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"a-0", "c-0"}, true)
	if h.g.state != StateDead {
		t.Fatalf("state %v after its last offset expired", h.g.state)
	}
}

// An offset with a pending transactional offset, or a commit not yet
// replicated, is kept, and so is its group.
func TestOffsetExpiryKeepsPending(t *testing.T) {
	h := newHarness(t)
	t0 := h.g.now
	h.setOffset("a", 0, t0)
	h.setOffset("a", 1, t0)
	h.setOffset("a", 2, t0)
	h.g.pendingTxn[7] = map[topicPartition]offsetEntry{{"a", 1}: {offset: 9}}
	h.g.unreplicated[topicPartition{"a", 2}] = offsetEntry{offset: 9}
	gone, deleted := h.expireAt(t0.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"a-0"}, false)
	delete(h.g.pendingTxn, 7)
	gone, deleted = h.expireAt(t0.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"a-1"}, false)
	delete(h.g.unreplicated, topicPartition{"a", 2})
	gone, deleted = h.expireAt(t0.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"a-2"}, true)
}

// A KIP-848 consumer group: offsets of a topic a member subscribes to are
// kept; others expire from their commit, members or not; once the last
// member leaves, the rest expire and the group's records are tombstoned.
func TestOffsetExpiryConsumerGroup(t *testing.T) {
	h := newHarness(t)
	t0 := h.g.now
	_, code := h.heartbeat848(consumerHeartbeat{memberID: "n", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}})
	if code != 0 {
		t.Fatal(code)
	}
	h.setOffset("a", 0, t0)
	h.setOffset("b", 0, t0)
	gone, deleted := h.expireAt(t0.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"b-0"}, false)
	gone, deleted = h.expireAt(t0.Add(100 * testRetention))
	expectExpired(t, gone, deleted, nil, false)

	if _, code := h.heartbeat848(consumerHeartbeat{memberID: "n", memberEpoch: -1}); code != 0 {
		t.Fatal(code)
	}
	from := len(h.written)
	gone, deleted = h.expireAt(t0.Add(100 * testRetention))
	expectExpired(t, gone, deleted, []string{"a-0"}, true)
	consumerTombstones := 0
	for _, r := range h.written[from:] {
		if k, _ := decodeKey(r.key); k.kind >= kindConsumerGroupMetadata {
			consumerTombstones++
		}
	}
	if consumerTombstones == 0 || h.g.state != StateDead || h.g.consumer != nil {
		t.Fatalf("consumer group deleted with %d consumer tombstones, state %v", consumerTombstones, h.g.state)
	}
}

// An empty group with no offsets is deleted at the next check, as Kafka's
// (a group whose members left without committing).
func TestOffsetExpiryDeletesEmptyGroup(t *testing.T) {
	h := newHarness(t)
	classicStable(t, h)
	for range 10 {
		h.advance(5 * time.Second)
	}
	gone, deleted := h.expireAt(h.g.now)
	expectExpired(t, gone, deleted, nil, true)
}

// A loaded Empty group counts from when it became empty (its metadata
// record's state timestamp), not from the load.
func TestOffsetExpiryAfterLoad(t *testing.T) {
	h := newHarness(t)
	emptySince := h.g.now.Add(-testRetention)
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = "consumer", 3, emptySince.UnixMilli()
	lg := &loadedGroup{meta: &v, offsets: map[topicPartition]offsetEntry{{"a", 0}: {offset: 1, commitTimestamp: emptySince.Add(-time.Hour).UnixMilli()}},
		pendingTxn: map[int64]map[topicPartition]offsetEntry{}}
	restore(h.g, lg, h.g.now)
	if !h.g.stateSince.Equal(emptySince) {
		t.Fatalf("state since %v after load, want %v", h.g.stateSince, emptySince)
	}
	gone, deleted := h.expireAt(h.g.now)
	expectExpired(t, gone, deleted, []string{"a-0"}, true)

	// A record without a state timestamp (-1): each offset counts from
	// its commit.
	h = newHarness(t)
	v.CurrentStateTimestamp = -1
	commit := h.g.now.Add(-testRetention / 2)
	lg.offsets = map[topicPartition]offsetEntry{{"a", 0}: {offset: 1, commitTimestamp: commit.UnixMilli()}}
	restore(h.g, lg, h.g.now)
	if !h.g.stateSince.IsZero() || h.g.metadataValue().CurrentStateTimestamp != -1 {
		t.Fatalf("no state timestamp: state since %v, written %d", h.g.stateSince, h.g.metadataValue().CurrentStateTimestamp)
	}
	gone, deleted = h.expireAt(commit.Add(testRetention - time.Millisecond))
	expectExpired(t, gone, deleted, nil, false)
	gone, deleted = h.expireAt(commit.Add(testRetention))
	expectExpired(t, gone, deleted, []string{"a-0"}, true)
}
