package chaos

import (
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/coordinator"
)

// TestShareGroupSharesCoordinator: the share group's offsets partition is
// the classic group's, whose coordinator the coordinator faults aim at.
func TestShareGroupSharesCoordinator(t *testing.T) {
	if a, b := coordinator.PartitionFor(shareGroupName, 50), coordinator.PartitionFor(groupName, 50); a != b {
		t.Fatalf("%s maps to __consumer_offsets-%d, %s to %d", shareGroupName, a, groupName, b)
	}
}

// TestPlanIsSeededAndBounded: a plan is a function of its seed; within a
// track no two faults overlap (at most one node fault at a time); every
// kind of a schedule runs before any repeats; nothing runs past the end.
func TestPlanIsSeededAndBounded(t *testing.T) {
	for _, s := range Schedules {
		a, b := s.Plan(7, 5*time.Minute, true), s.Plan(7, 5*time.Minute, true)
		if !slices.Equal(a, b) {
			t.Fatalf("%s: two plans for seed 7 differ", s.Name)
		}
		if c := s.Plan(8, 5*time.Minute, true); slices.Equal(a, c) {
			t.Fatalf("%s: seeds 7 and 8 give the same plan", s.Name)
		}
		end := map[string]time.Duration{}
		seen := map[FaultKind]bool{}
		for _, e := range a {
			tr := e.Kind.track()
			if e.At < end[tr] {
				t.Fatalf("%s: %s at %v overlaps the previous %s fault ending at %v", s.Name, e.Kind, e.At, tr, end[tr])
			}
			end[tr] = e.At + e.For
			if end[tr] > 5*time.Minute {
				t.Fatalf("%s: %s runs past the end", s.Name, e.Kind)
			}
			seen[e.Kind] = true
		}
		for _, k := range s.Kinds {
			if !seen[k] {
				t.Errorf("%s: %s never planned in 5 minutes", s.Name, k)
			}
		}
		if nonet := s.Plan(7, 5*time.Minute, false); slices.ContainsFunc(nonet, func(e Event) bool {
			return e.Kind == PartNode || e.Kind == PartNATS || e.Kind == PartS3
		}) {
			t.Errorf("%s: network partitions planned without iptables", s.Name)
		}
	}
}

// TestSmokePlanCoversItsKinds: make test's run (seed 7, 40 s) plans every
// kind of the smoke schedule.
func TestSmokePlanCoversItsKinds(t *testing.T) {
	s, err := ScheduleNamed("smoke")
	if err != nil {
		t.Fatal(err)
	}
	plan := s.Plan(smokeSeed, smokeDuration, true)
	for _, k := range s.Kinds {
		if !slices.ContainsFunc(plan, func(e Event) bool { return e.Kind == k }) {
			t.Errorf("smoke seed %d over %v plans no %s: %v", smokeSeed, smokeDuration, k, plan)
		}
	}
}
