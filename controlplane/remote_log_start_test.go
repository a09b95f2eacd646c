package controlplane

import (
	"errors"
	"testing"
)

// The log start DeleteRecords records only moves up, is fenced by leader
// epoch, is seen by another node's RemoteLog, and sits beside the segment
// records without being taken for one.
func TestRemoteLogStartOnlyMovesUp(t *testing.T) {
	s, rl, top := remoteFixture(t)
	ctx := testCtx(t)
	if _, ok := rl.RemoteLogStart(top.ID, 0); ok {
		t.Fatal("a log start before any was recorded")
	}
	ps, _ := s.Partition("tiered", 0)
	if err := rl.RaiseLogStart(ctx, top.ID, 0, 100, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if err := rl.RaiseLogStart(ctx, top.ID, 0, 50, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if got, ok := rl.RemoteLogStart(top.ID, 0); !ok || got != 100 {
		t.Fatalf("log start %d (%v) after raising to 100 then 50, want 100", got, ok)
	}
	if err := rl.RaiseLogStart(ctx, top.ID, 0, 200, ps.LeaderEpoch-1); !errors.Is(err, ErrFenced) {
		t.Fatalf("a write from an older epoch: %v, want ErrFenced", err)
	}
	if _, ok := rl.RemoteLogStart(top.ID, 1); ok {
		t.Fatal("partition 1 got partition 0's log start")
	}
	other, err := OpenRemoteLog(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, ok := other.RemoteLogStart(top.ID, 0); !ok || got != 100 {
		t.Fatalf("another RemoteLog sees log start %d (%v), want 100", got, ok)
	}
	if segs := other.ListRemoteSegments(top.ID, 0); len(segs) != 0 || len(other.RemoteTopicIDs()) != 0 {
		t.Fatalf("the log start record was taken for a segment: %v", segs)
	}
}

// LowerLogStart (a restore from quarantine) only moves the log start
// down, leaves a partition without one as it is, and is fenced like
// RaiseLogStart.
func TestRemoteLogStartLowered(t *testing.T) {
	s, rl, top := remoteFixture(t)
	ctx := testCtx(t)
	ps, _ := s.Partition("tiered", 0)
	if err := rl.LowerLogStart(ctx, top.ID, 1, 10, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if got, ok := rl.RemoteLogStart(top.ID, 1); ok {
		t.Fatalf("lowering a partition without a log start recorded %d", got)
	}
	if err := rl.RaiseLogStart(ctx, top.ID, 0, 100, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if err := rl.LowerLogStart(ctx, top.ID, 0, 150, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if got, ok := rl.RemoteLogStart(top.ID, 0); !ok || got != 100 {
		t.Fatalf("log start %d (%v) after lowering 100 to 150, want 100", got, ok)
	}
	if err := rl.LowerLogStart(ctx, top.ID, 0, 80, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if got, ok := rl.RemoteLogStart(top.ID, 0); !ok || got != 80 {
		t.Fatalf("log start %d (%v) after lowering 100 to 80, want 80", got, ok)
	}
	if err := rl.LowerLogStart(ctx, top.ID, 0, 10, ps.LeaderEpoch-1); !errors.Is(err, ErrFenced) {
		t.Fatalf("a lowering from an older epoch: %v, want ErrFenced", err)
	}
	if got, _ := rl.RemoteLogStart(top.ID, 0); got != 80 {
		t.Fatalf("log start %d after a fenced lowering, want 80", got)
	}
}
