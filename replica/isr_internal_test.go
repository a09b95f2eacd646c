package replica

import (
	"slices"
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/partition"
)

// TestProposeISRNeverReadmitsADeadFollower is the first step of issue 22's
// clean-clone loss: the followers were killed, the controller took them out
// of the ISR into the ELR, and the leader, whose catch-up rule saw their
// last fetches within replica.lag.time.max.ms, put them back (clearing the
// ELR) just before it was killed itself. A follower whose broker has no
// live registration is not re-admitted; a live one is.
func TestProposeISRNeverReadmitsADeadFollower(t *testing.T) {
	st := controlplane.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1}, ELR: []int32{2, 3}}
	readmit := partition.ISRChange{Expand: []int32{2, 3}}
	live := func(ids ...int32) func(int32) bool { return func(b int32) bool { return slices.Contains(ids, b) } }

	if next, ok := proposeISR(st, readmit, live(1), 2); ok {
		t.Fatalf("followers dead: proposed ISR %v ELR %v; want no change", next.ISR, next.ELR)
	}
	next, ok := proposeISR(st, readmit, live(1, 3), 2)
	if !ok || !slices.Equal(next.ISR, []int32{1, 3}) || next.ELR != nil {
		t.Fatalf("follower 3 live: ok %v ISR %v ELR %v; want ISR [1 3], the ELR cleared", ok, next.ISR, next.ELR)
	}
	shrink := partition.ISRChange{Shrink: []int32{3}}
	next, ok = proposeISR(controlplane.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}}, shrink, live(1), 2)
	if !ok || !slices.Equal(next.ISR, []int32{1}) || !slices.Equal(next.ELR, []int32{3}) {
		t.Fatalf("shrink below min.insync: ok %v ISR %v ELR %v; want ISR [1], ELR [3]", ok, next.ISR, next.ELR)
	}
}
