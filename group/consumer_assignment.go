package group

import (
	"bytes"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicID is a topic's UUID.
type topicID = [16]byte

// assignment maps topic ids to sorted partition lists. A topic with no
// partition is absent.
type assignment map[topicID][]int32

func (a assignment) add(id topicID, ps ...int32) {
	for _, p := range ps {
		cur := a[id]
		i, found := slices.BinarySearch(cur, p)
		if !found {
			a[id] = slices.Insert(cur, i, p)
		}
	}
}

func (a assignment) has(id topicID, p int32) bool {
	_, found := slices.BinarySearch(a[id], p)
	return found
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for id, ps := range a {
		if len(ps) > 0 {
			out[id] = slices.Clone(ps)
		}
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	if a.count() != b.count() {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// topicIDs are a's topics in byte order.
func (a assignment) topicIDs() []topicID {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, func(x, y topicID) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

// fromOwned turns the owned partitions of a heartbeat into an assignment;
// nil stays nil (the member did not say).
func fromOwned(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	if ts == nil {
		return nil
	}
	a := assignment{}
	for _, t := range ts {
		a.add(t.TopicID, t.Partitions...)
	}
	return a
}

func (a assignment) heartbeatAssignment() *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range a.topicIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(a[id])
		out.Topics = append(out.Topics, t)
	}
	return &out
}

// reconcile is Kafka's CurrentAssignmentBuilder: it moves m one step
// towards target, the member's share of the target assignment of
// targetEpoch. owned is what the member said it owns (nil: not said);
// ownerOf names the member that owns a partition now (assigned or pending
// revocation), "" for a free one. A partition is given to m only once no
// other member owns it; a member that still owns partitions it must give
// up keeps its epoch until it says it revoked them.
func reconcile(m *consumerMember, target assignment, targetEpoch int32, owned assignment, ownerOf func(topicID, int32) string) {
	ownsRevoked := func(pending assignment) bool {
		if owned == nil {
			return true
		}
		for id, ps := range owned {
			for _, p := range ps {
				if pending.has(id, p) {
					return true
				}
			}
		}
		return false
	}
	next := func(epoch int32) {
		assigned, revoke, pendingAssign := assignment{}, assignment{}, assignment{}
		unreleased := false
		ids := map[topicID]bool{}
		for id := range target {
			ids[id] = true
		}
		for id := range m.assigned {
			ids[id] = true
		}
		for id := range ids {
			for _, p := range m.assigned[id] {
				if target.has(id, p) {
					assigned.add(id, p)
				} else {
					revoke.add(id, p)
				}
			}
			for _, p := range target[id] {
				if assigned.has(id, p) {
					continue
				}
				if ownerOf(id, p) != "" { // another member's, or still being revoked by m

					unreleased = true
					continue
				}
				pendingAssign.add(id, p)
			}
		}
		switch {
		case len(revoke) > 0 && ownsRevoked(revoke):
			m.state = memberUnrevoked
			m.setEpoch(epoch)
			m.assigned, m.pendingRevoke = assigned, revoke
		default:
			for id, ps := range pendingAssign {
				assigned.add(id, ps...)
			}
			m.state = memberStable
			if unreleased {
				m.state = memberUnreleased
			}
			m.setEpoch(targetEpoch)
			m.assigned, m.pendingRevoke = assigned, assignment{}
		}
	}
	switch m.state {
	case memberStable:
		if m.epoch != targetEpoch {
			next(m.epoch)
		}
	case memberUnrevoked:
		if !ownsRevoked(m.pendingRevoke) {
			next(m.epoch + 1)
		}
	case memberUnreleased:
		next(m.epoch)
	default: // unknown: the handler fences it before
		next(targetEpoch)
	}
}

// setEpoch moves the member epoch, keeping the previous one (a member whose
// answer was lost may heartbeat with it).
func (m *consumerMember) setEpoch(e int32) { m.previousEpoch, m.epoch = m.epoch, e }
