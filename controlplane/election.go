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
	// Reregistered is true when the leader stayed but registered again
	// with a new incarnation, and the leader epoch was bumped for it.
	Reregistered bool
}

// ElectOnBrokerChange is Elect with every live broker trusted and
// min.insync.replicas 1 (no eligible leader replicas are added): the rules
// for a caller that knows only which brokers are live, such as ElectLeaders
// UNCLEAN.
func ElectOnBrokerChange(st PartitionState, live func(int32) bool, unclean bool) Decision {
	return Elect(st, View{Live: live, Unclean: unclean})
}

// LiveFor is the liveness of brokers for partition st: registered (live)
// and not reporting st's replica offline (offline, by broker:
// Store.OfflineReplicas). A broker whose replica of st failed to open, or
// whose log of st went offline, is dead for st alone, as Kafka's controller
// treats the replicas of an offline log dir: it leaves the ISR and does not
// lead.
func LiveFor(st PartitionState, live func(int32) bool, offline map[int32][]OfflineReplica) func(int32) bool {
	return func(b int32) bool {
		return live(b) && !slices.Contains(offline[b], OfflineReplica{TopicID: st.TopicID, Partition: st.Partition})
	}
}

// ElectPreferred moves leadership to the first assigned replica when it is
// live and in the ISR (ElectLeaders with PREFERRED). A partition without a
// leader is left to the controller, which alone knows whether a returning
// replica can be trusted with its data (Elect).
func ElectPreferred(st PartitionState, live func(int32) bool) Decision {
	next := st.clone()
	if len(st.Replicas) > 0 && st.Leader >= 0 {
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
// the ISR unless it would empty it. With minISR (min.insync.replicas) above
// 0 the ELR rule applies (ChangeISR): node, which stops holding every
// acknowledged record, joins the ELR when the ISR falls below minISR, as
// Kafka's controller puts a broker in controlled shutdown in the ELR
// (KIP-966); left out, the member it handed leadership to was the only
// candidate, and when that one was lost the partition had no leader even
// after node came back. minISR 0 leaves the ELR as it is: for a node whose
// log went offline, which holds nothing it can serve.
func MoveLeaderAway(st PartitionState, node int32, live func(int32) bool, minISR int) Decision {
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
			if minISR > 0 {
				next = ChangeISR(next, isr, minISR)
			} else {
				next.ISR = isr
			}
		}
	}
	return finish(st, next)
}

// ReconcilePartition is the controller's pass over one partition: it
// applies Elect, then completes a reassignment whose target
// replicas are all in the ISR (CompleteReassignment), as one change.
//
// It also fences a leader that registered again (v.Incarnation): the
// record keeps the incarnation of the leader's registration, stamped the
// first time the controller sees the leader, and a leader whose
// registration now has another one restarted, so the epoch is bumped, as
// Kafka's controller bumps the leader epochs of a broker that registers
// with a new incarnation. Its followers then check for divergence
// (OffsetForLeaderEpoch), and nothing written or promised in the old
// process's epoch is taken for the new one's.
func ReconcilePartition(st PartitionState, v View) Decision {
	next := Elect(st, v).State
	next.LeaderEpoch = st.LeaderEpoch
	d := finish(st, completeReassignment(next, v.Live))
	if v.Incarnation == nil || d.State.Leader < 0 {
		return d
	}
	inc := v.Incarnation(d.State.Leader)
	if inc == "" || inc == d.State.LeaderIncarnation {
		return d
	}
	if !d.LeaderChanged && d.State.LeaderIncarnation != "" {
		d.State.LeaderEpoch = st.LeaderEpoch + 1
		d.Reregistered = true
	}
	d.State.LeaderIncarnation, d.Changed = inc, true
	return d
}

// finish compares and bumps the leader epoch when the leader moved; a new
// leader's incarnation is not known to the caller: it is cleared, for the
// controller to stamp (ReconcilePartition).
func finish(old, next PartitionState) Decision {
	d := Decision{State: next}
	d.LeaderChanged = old.Leader != next.Leader
	if d.LeaderChanged {
		d.State.LeaderEpoch = old.LeaderEpoch + 1
		if d.State.LeaderIncarnation == old.LeaderIncarnation {
			d.State.LeaderIncarnation = ""
		}
	}
	d.Changed = d.LeaderChanged || !slices.Equal(old.ISR, next.ISR) || !slices.Equal(old.ELR, next.ELR) || !slices.Equal(old.Replicas, next.Replicas) ||
		!slices.Equal(old.AddingReplicas, next.AddingReplicas) || !slices.Equal(old.RemovingReplicas, next.RemovingReplicas) ||
		old.LeaderIncarnation != d.State.LeaderIncarnation
	return d
}
