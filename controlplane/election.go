package controlplane

import "slices"

// The controller's decisions are pure functions of a partition's state and
// the set of live brokers: no clock, no I/O, so every rule is unit-tested
// without NATS (STYLE.md 6). The Controller applies their results with
// compare-and-set.

// Decision is a partition's next state, and whether it differs.
type Decision struct {
	State   PartitionState
	Changed bool
	// LeaderChanged is true when the leader (and so the leader epoch) moved.
	LeaderChanged bool
}

// ElectOnBrokerChange brings a partition in line with the live brokers, as a
// KRaft controller does when a broker is fenced or unfenced:
//
//   - dead brokers leave the ISR, except that the ISR never becomes empty: its
//     last member stays (KIP-966's last known leader), so that it can lead
//     again when it returns without losing acknowledged writes;
//   - a live leader in the ISR keeps leading;
//   - otherwise the first replica, in assignment order, that is live and in
//     the ISR leads; with unclean.leader.election.enable a live replica
//     outside the ISR may lead when no ISR member is live, and the ISR
//     becomes just that replica;
//   - with no candidate the partition is offline (leader -1);
//   - every change of leader bumps the leader epoch.
func ElectOnBrokerChange(st PartitionState, live func(int32) bool, unclean bool) Decision {
	next := st.clone()
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return !live(b) })
	if len(isr) == 0 && len(st.ISR) > 0 {
		// Keep the last ISR member: it holds every acknowledged write.
		last := st.ISR[0]
		if slices.Contains(st.ISR, st.Leader) {
			last = st.Leader
		}
		isr = []int32{last}
	}
	next.ISR = isr
	switch {
	case st.Leader >= 0 && live(st.Leader) && slices.Contains(isr, st.Leader):
		// The leader stays.
	default:
		next.Leader = -1
		for _, r := range st.Replicas {
			if live(r) && slices.Contains(isr, r) {
				next.Leader = r
				break
			}
		}
		if next.Leader < 0 && unclean {
			for _, r := range st.Replicas {
				if live(r) {
					next.Leader = r
					next.ISR = []int32{r}
					break
				}
			}
		}
	}
	return finish(st, next)
}

// ElectPreferred moves leadership to the first assigned replica when it is
// live and in the ISR (ElectLeaders with PREFERRED).
func ElectPreferred(st PartitionState, live func(int32) bool) Decision {
	next := st.clone()
	if len(st.Replicas) > 0 {
		p := st.Replicas[0]
		if p != st.Leader && live(p) && slices.Contains(st.ISR, p) {
			next.Leader = p
		}
	}
	return finish(st, next)
}

// MoveLeaderAway elects another leader than node (controlled shutdown): the
// first other replica that is live and in the ISR. Without one the leader
// stays: a partition is not taken offline by a clean stop. node also leaves
// the ISR unless it would empty it.
func MoveLeaderAway(st PartitionState, node int32, live func(int32) bool) Decision {
	alive := func(b int32) bool { return b != node && live(b) }
	next := st.clone()
	if st.Leader == node {
		for _, r := range st.Replicas {
			if alive(r) && slices.Contains(st.ISR, r) {
				next.Leader = r
				break
			}
		}
	}
	if next.Leader != node {
		if isr := slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return b == node }); len(isr) > 0 {
			next.ISR = isr
		}
	}
	return finish(st, next)
}

// ReconcilePartition is the controller's pass over one partition: it
// applies ElectOnBrokerChange, then completes a reassignment whose target
// replicas are all in the ISR (CompleteReassignment), as one change.
func ReconcilePartition(st PartitionState, live func(int32) bool, unclean bool) Decision {
	next := ElectOnBrokerChange(st, live, unclean).State
	next.LeaderEpoch = st.LeaderEpoch
	return finish(st, completeReassignment(next, live))
}

// finish compares and bumps the leader epoch when the leader moved.
func finish(old, next PartitionState) Decision {
	d := Decision{State: next}
	d.LeaderChanged = old.Leader != next.Leader
	if d.LeaderChanged {
		d.State.LeaderEpoch = old.LeaderEpoch + 1
	}
	d.Changed = d.LeaderChanged || !slices.Equal(old.ISR, next.ISR) || !slices.Equal(old.Replicas, next.Replicas) ||
		!slices.Equal(old.AddingReplicas, next.AddingReplicas) || !slices.Equal(old.RemovingReplicas, next.RemovingReplicas)
	return d
}
