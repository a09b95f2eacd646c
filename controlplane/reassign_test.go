package controlplane

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// moving is a partition state with a reassignment in progress.
func moving(leader, epoch int32, replicas, isr, adding, removing []int32) PartitionState {
	st := ps(leader, epoch, replicas, isr)
	st.AddingReplicas, st.RemovingReplicas = adding, removing
	return st
}

func stateString(st PartitionState) string {
	return fmt.Sprintf("leader %d epoch %d replicas %v isr %v adding %v removing %v",
		st.Leader, st.LeaderEpoch, st.Replicas, st.ISR, st.AddingReplicas, st.RemovingReplicas)
}

func sameState(a, b PartitionState) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && slices.Equal(a.Replicas, b.Replicas) &&
		slices.Equal(a.ISR, b.ISR) && slices.Equal(a.AddingReplicas, b.AddingReplicas) &&
		slices.Equal(a.RemovingReplicas, b.RemovingReplicas)
}

func TestStartReassignment(t *testing.T) {
	all := liveSet(1, 2, 3, 4, 5)
	cases := []struct {
		name   string
		st     PartitionState
		target []int32
		want   PartitionState
	}{
		{"replace the leader: old ∪ new, leader and ISR untouched",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{4, 2, 3},
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1})},
		{"replace a follower, new one first in the target",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{4, 1, 2},
			moving(1, 3, []int32{4, 1, 2, 3}, []int32{1, 2, 3}, []int32{4}, []int32{3})},
		{"reorder only: completes at once, leader stays",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{3, 2, 1},
			ps(1, 3, []int32{3, 2, 1}, []int32{1, 2, 3})},
		{"remove a follower in sync: completes at once",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{1, 2},
			ps(1, 3, []int32{1, 2}, []int32{1, 2})},
		{"remove the leader, the rest in sync: completes, leader moves in target order, epoch bumped",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), []int32{3, 2},
			ps(3, 4, []int32{3, 2}, []int32{2, 3})},
		{"remove a follower out of sync: it simply goes",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2}), []int32{1, 2},
			ps(1, 3, []int32{1, 2}, []int32{1, 2})},
		{"keep an out-of-sync follower: waits for it",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2}), []int32{2, 3},
			moving(1, 3, []int32{2, 3, 1}, []int32{1, 2}, nil, []int32{1})},
		{"a new target over one in progress: current is old ∪ new",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1}), []int32{5, 2, 3},
			moving(1, 3, []int32{5, 2, 3, 4, 1}, []int32{1, 2, 3}, []int32{5}, []int32{4, 1})},
		{"a new target equal to the original: completes (a cancel by another name)",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1}), []int32{1, 2, 3},
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3})},
	}
	for _, c := range cases {
		d := StartReassignment(c.st, c.target, all)
		if !sameState(d.State, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, stateString(d.State), stateString(c.want))
		}
		if d.Changed == sameState(c.st, d.State) {
			t.Errorf("%s: Changed %v", c.name, d.Changed)
		}
	}
}

func TestCompleteReassignment(t *testing.T) {
	cases := []struct {
		name string
		st   PartitionState
		live []int32
		want PartitionState
	}{
		{"adding replica not yet in the ISR: nothing",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1}), []int32{1, 2, 3, 4},
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1})},
		{"adding replica joined: replicas = target, ISR trimmed, the removed leader hands over to the first target in the ISR",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3, 4}, []int32{4}, []int32{1}), []int32{1, 2, 3, 4},
			ps(4, 4, []int32{4, 2, 3}, []int32{2, 3, 4})},
		{"same, the first target is dead (not yet fenced): the next one leads",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3, 4}, []int32{4}, []int32{1}), []int32{1, 2, 3},
			ps(2, 4, []int32{4, 2, 3}, []int32{2, 3, 4})},
		{"leader stays when it is a target",
			moving(1, 3, []int32{4, 1, 2, 3}, []int32{1, 2, 3, 4}, []int32{4}, []int32{3}), []int32{1, 2, 3, 4},
			ps(1, 3, []int32{4, 1, 2}, []int32{1, 2, 4})},
		{"no reassignment: nothing",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2}), []int32{1, 2, 3},
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2})},
	}
	for _, c := range cases {
		d := CompleteReassignment(c.st, liveSet(c.live...))
		if !sameState(d.State, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, stateString(d.State), stateString(c.want))
		}
	}
}

func TestCancelReassignment(t *testing.T) {
	all := liveSet(1, 2, 3, 4)
	cases := []struct {
		name    string
		st      PartitionState
		unclean bool
		want    PartitionState
		err     error
	}{
		{"adding replica out of the ISR: back to the original replicas",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1}), false,
			ps(1, 3, []int32{2, 3, 1}, []int32{1, 2, 3}), nil},
		{"adding replica in the ISR and leading: it leaves, a remaining ISR replica leads",
			moving(4, 5, []int32{4, 2, 3, 1}, []int32{4, 2}, []int32{4}, []int32{1}), false,
			ps(2, 6, []int32{2, 3, 1}, []int32{2}), nil},
		{"only adding replicas in the ISR: refused",
			moving(4, 5, []int32{4, 1}, []int32{4}, []int32{4}, []int32{1}), false,
			moving(4, 5, []int32{4, 1}, []int32{4}, []int32{4}, []int32{1}), ErrInvalidReplicaAssignment},
		{"same with unclean.leader.election.enable: the ISR becomes the remaining replicas",
			moving(4, 5, []int32{4, 1}, []int32{4}, []int32{4}, []int32{1}), true,
			ps(1, 6, []int32{1}, []int32{1}), nil},
		{"nothing in progress",
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), false,
			ps(1, 3, []int32{1, 2, 3}, []int32{1, 2, 3}), ErrNoReassignmentInProgress},
	}
	for _, c := range cases {
		d, err := CancelReassignment(c.st, all, c.unclean)
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
		}
		if !sameState(d.State, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, stateString(d.State), stateString(c.want))
		}
	}
}

func TestReconcilePartitionDuringReassignment(t *testing.T) {
	cases := []struct {
		name string
		st   PartitionState
		live []int32
		want PartitionState
	}{
		{"the removing leader dies: the first live target in the ISR leads, the move goes on",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3}, []int32{4}, []int32{1}), []int32{2, 3, 4},
			moving(2, 4, []int32{4, 2, 3, 1}, []int32{2, 3}, []int32{4}, []int32{1})},
		{"the adding replica is in the ISR: completes in the same pass",
			moving(1, 3, []int32{4, 2, 3, 1}, []int32{1, 2, 3, 4}, []int32{4}, []int32{1}), []int32{1, 2, 3, 4},
			ps(4, 4, []int32{4, 2, 3}, []int32{2, 3, 4})},
		{"a removing follower dies and the rest is in sync: completes",
			moving(1, 3, []int32{1, 2, 4, 3}, []int32{1, 2, 3, 4}, nil, []int32{3}), []int32{1, 2, 4},
			ps(1, 3, []int32{1, 2, 4}, []int32{1, 2, 4})},
		{"an adding replica is never elected while outside the ISR",
			moving(1, 3, []int32{4, 1}, []int32{1}, []int32{4}, []int32{1}), []int32{4},
			moving(-1, 4, []int32{4, 1}, []int32{1}, []int32{4}, []int32{1})},
	}
	for _, c := range cases {
		d := ReconcilePartition(c.st, View{Live: liveSet(c.live...)})
		if !sameState(d.State, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, stateString(d.State), stateString(c.want))
		}
	}
}

func TestValidateReplicaAssignment(t *testing.T) {
	live := liveSet(1, 2, 3)
	for _, c := range []struct {
		replicas []int32
		ok       bool
	}{{[]int32{1, 2, 3}, true}, {[]int32{3}, true}, {nil, false}, {[]int32{1, 1}, false}, {[]int32{1, 4}, false}} {
		err := ValidateReplicaAssignment(c.replicas, live)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidReplicaAssignment)) {
			t.Errorf("%v: %v", c.replicas, err)
		}
	}
}

func TestValidateAssignment(t *testing.T) {
	registered, live := liveSet(1, 2, 3, 4), liveSet(1, 2, 3)
	for _, c := range []struct {
		name string
		a    [][]int32
		rf   int
		ok   bool
	}{
		{"good", [][]int32{{4, 1, 2}, {2, 3, 4}}, 3, true},
		{"a fenced broker", [][]int32{{4}}, 1, false},
		{"different replica counts", [][]int32{{1, 2, 3}, {1, 2}}, 3, false},
		{"not the topic's replication factor", [][]int32{{1, 2}}, 3, false},
		{"a broker twice", [][]int32{{1, 1, 2}}, 3, false},
		{"an unregistered broker", [][]int32{{1, 2, 9}}, 3, false},
		{"an empty list", [][]int32{{}}, 0, false},
	} {
		err := ValidateAssignment(c.a, c.rf, registered, live)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidReplicaAssignment)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
