package controlplane

import (
	"fmt"
	"slices"
)

// Reassignment follows KIP-455 as Kafka's KRaft controller implements it
// (ReplicationControlManager, PartitionReassignmentReplicas,
// PartitionReassignmentRevert, PartitionChangeBuilder):
//
//   - starting one sets Replicas to target ++ (current − target), with
//     AddingReplicas = target − current and RemovingReplicas = current −
//     target, where current is the Replicas of the moment (old ∪ new if a
//     reassignment is already in progress). Nothing else changes: the
//     adding replicas fetch as followers outside the ISR, and the leader
//     adds them to the ISR by its catch-up rule like any follower;
//   - it completes as soon as every target replica is in the ISR: Replicas
//     becomes the target, the ISR loses the removing replicas, and a leader
//     being removed hands over to the first target replica, in target order,
//     that is live and in the ISR. Only then do the removed replicas stop
//     and delete their logs (a node deletes a replica once it is no longer
//     in Replicas);
//   - cancelling one (a null target) drops the adding replicas from the
//     replicas and the ISR and keeps the removing ones. When no ISR member
//     would be left, reverting needs an unclean election and is refused
//     unless unclean.leader.election.enable is set.

// Reassigning reports whether a reassignment is in progress.
func (p PartitionState) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas returns the replicas the partition will have when its
// reassignment completes: Replicas without the RemovingReplicas. The caller
// owns the result.
func (p PartitionState) TargetReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) })
}

// ValidateReplicaAssignment checks one partition's replica list as Kafka
// does for a reassignment or a manual assignment: not empty, no broker
// twice, every broker registered (Store.Registered: fenced brokers count,
// ids that never registered or were unregistered do not). It returns an
// ErrInvalidReplicaAssignment.
func ValidateReplicaAssignment(replicas []int32, registered func(int32) bool) error {
	if len(replicas) == 0 {
		return fmt.Errorf("%w: empty replica list", ErrInvalidReplicaAssignment)
	}
	seen := make(map[int32]bool, len(replicas))
	for _, b := range replicas {
		if seen[b] {
			return fmt.Errorf("%w: broker %d listed twice in %v", ErrInvalidReplicaAssignment, b, replicas)
		}
		seen[b] = true
		if !registered(b) {
			return fmt.Errorf("%w: broker %d is not registered", ErrInvalidReplicaAssignment, b)
		}
	}
	return nil
}

// ValidateAssignment checks a manual assignment of partitions (CreateTopics,
// CreatePartitions) as Kafka does: every partition has rf replicas (the
// same count for all), each list passes ValidateReplicaAssignment, and
// each names at least one live broker to lead it (Kafka's "All brokers
// specified in the manual partition assignment for partition N are
// fenced"). The new partition's ISR is then its live replicas; its fenced
// ones join by the leader's catch-up rule once they are back. It returns an
// ErrInvalidReplicaAssignment naming the partition (numbered from 0 within
// assignment).
func ValidateAssignment(assignment [][]int32, rf int, registered, live func(int32) bool) error {
	for i, replicas := range assignment {
		if err := ValidateReplicaAssignment(replicas, registered); err != nil {
			return fmt.Errorf("partition %d: %w", i, err)
		}
		if len(replicas) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas, want %d like every partition", ErrInvalidReplicaAssignment, i, len(replicas), rf)
		}
		if !slices.ContainsFunc(replicas, live) {
			return fmt.Errorf("%w: all brokers specified in the manual partition assignment for partition %d are fenced: %v",
				ErrInvalidReplicaAssignment, i, replicas)
		}
	}
	return nil
}

// liveIn is the membership test of a broker list.
func liveIn(brokers []Broker) func(int32) bool {
	return func(id int32) bool {
		return slices.ContainsFunc(brokers, func(b Broker) bool { return b.NodeID == id })
	}
}

// StartReassignment starts a reassignment of st towards target (validated
// by the caller: see ValidateReplicaAssignment), replacing one in progress,
// and completes it at once when every target replica is already in the ISR
// (a reorder, or a move that only removes replicas).
func StartReassignment(st PartitionState, target []int32, live func(int32) bool) Decision {
	next := st.clone()
	next.AddingReplicas = nil
	next.RemovingReplicas = nil
	for _, r := range target {
		if !slices.Contains(st.Replicas, r) {
			next.AddingReplicas = append(next.AddingReplicas, r)
		}
	}
	next.Replicas = slices.Clone(target)
	for _, r := range st.Replicas {
		if !slices.Contains(target, r) {
			next.RemovingReplicas = append(next.RemovingReplicas, r)
			next.Replicas = append(next.Replicas, r)
		}
	}
	return finish(st, completeReassignment(next, live))
}

// CompleteReassignment completes st's reassignment if every target replica
// is in the ISR; otherwise nothing changes.
func CompleteReassignment(st PartitionState, live func(int32) bool) Decision {
	return finish(st, completeReassignment(st.clone(), live))
}

// completeReassignment is CompleteReassignment on a state the caller owns.
func completeReassignment(st PartitionState, live func(int32) bool) PartitionState {
	if !st.Reassigning() {
		return st
	}
	target := st.TargetReplicas()
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return slices.Contains(st.RemovingReplicas, r) })
	if len(isr) == 0 {
		return st
	}
	for _, r := range target {
		if !slices.Contains(isr, r) {
			return st
		}
	}
	st.Replicas, st.ISR = target, isr
	st.AddingReplicas, st.RemovingReplicas = nil, nil
	if !slices.Contains(target, st.Leader) {
		st.Leader = firstLiveIn(target, isr, live)
	}
	return st
}

// CancelReassignment reverts st's reassignment in progress: the adding
// replicas leave the replicas and the ISR, the removing ones stay. A leader
// being added hands over to the first remaining replica that is live and
// in the ISR. ErrNoReassignmentInProgress when there is none;
// ErrInvalidReplicaAssignment when no ISR member would remain and unclean
// is false (with unclean, the ISR becomes the remaining replicas, as Kafka's
// PartitionReassignmentRevert does).
func CancelReassignment(st PartitionState, live func(int32) bool, unclean bool) (Decision, error) {
	if !st.Reassigning() {
		return Decision{State: st}, fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, st.Topic, st.Partition)
	}
	next := st.clone()
	adding := func(r int32) bool { return slices.Contains(st.AddingReplicas, r) }
	next.Replicas = slices.DeleteFunc(next.Replicas, adding)
	next.ISR = slices.DeleteFunc(next.ISR, adding)
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if len(next.ISR) == 0 {
		if !unclean {
			return Decision{State: st}, fmt.Errorf("%w: reverting the reassignment of %s-%d leaves no in-sync replica; it needs unclean.leader.election.enable",
				ErrInvalidReplicaAssignment, st.Topic, st.Partition)
		}
		next.ISR = slices.Clone(next.Replicas)
	}
	if !slices.Contains(next.Replicas, next.Leader) {
		next.Leader = firstLiveIn(next.Replicas, next.ISR, live)
	}
	return finish(st, next), nil
}

// firstLiveIn returns the first of order that is live and in isr, or -1.
func firstLiveIn(order, isr []int32, live func(int32) bool) int32 {
	for _, r := range order {
		if live(r) && slices.Contains(isr, r) {
			return r
		}
	}
	return -1
}
