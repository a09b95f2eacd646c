package tiering

import (
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment"
)

// A segment uploaded by an older leader whose tail the current log replaced
// (issue 16 item 5): the old leader, in epoch 1, uploaded [0, 99]; it lost
// leadership, the new leader (epoch 2) had only [0, 49] and wrote its own
// records from 50, and the old leader, now a follower, truncated to 50 and
// took them. The old copy holds other records at 50-99: it must not count as
// covering the current log's segment there, else that segment is never
// uploaded and local retention deletes it.
func TestCoverageFollowsTheEpochLineage(t *testing.T) {
	old := controlplane.RemoteSegment{SegmentID: "old", BaseOffset: 0, EndOffset: 99, State: controlplane.CopyFinished,
		LeaderEpoch: 1, SegmentEpochs: []controlplane.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 40}}}
	current := []segment.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 40}, {Epoch: 2, StartOffset: 50}}
	local := []segment.SegmentInfo{
		{BaseOffset: 0, NextOffset: 100, Size: 1000},
		{BaseOffset: 100, NextOffset: 120, Size: 200, Active: true},
	}
	remote := []controlplane.RemoteSegment{old}
	if Covered(remote, 0, 99, current) {
		t.Fatal("[0, 99] counted as covered by a copy whose records from 50 are another leader's")
	}
	if !Covered(remote, 0, 49, current) {
		t.Fatal("[0, 49], the part of the old copy inside the lineage, not covered")
	}
	if plan := UploadPlan(local, remote, 120, current); len(plan) != 1 || plan[0].BaseOffset != 0 {
		t.Fatalf("upload plan %+v, want the current log's [0, 100)", plan)
	}
	if next := CopiedNext(local, remote, current); next != 0 {
		t.Fatalf("CopiedNext %d, want 0: nothing of the current log is uploaded whole", next)
	}
	// Once the current leader's own copy is in, the segment is covered
	// (the old copy is an orphan beside it).
	mine := controlplane.RemoteSegment{SegmentID: "mine", BaseOffset: 0, EndOffset: 99, State: controlplane.CopyFinished,
		LeaderEpoch: 2, SegmentEpochs: []controlplane.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 40}, {Epoch: 2, StartOffset: 50}}}
	remote = []controlplane.RemoteSegment{old, mine}
	if next := CopiedNext(local, remote, current); next != 100 {
		t.Fatalf("CopiedNext %d with the current leader's copy, want 100", next)
	}
	// A history cut at the log start agrees with a full one over what both hold.
	cut := []segment.EpochEntry{{Epoch: 1, StartOffset: 45}, {Epoch: 2, StartOffset: 50}}
	if !SameLineage(cut, mine.SegmentEpochs, 45, 99) {
		t.Fatal("a history cut at 45 disagrees with the full one over [45, 99]")
	}
}
