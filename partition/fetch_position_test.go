package partition

import (
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// TestFetchPositionSinceFollowsEveryChange: FetchPositionSince hands back
// the position it was given while nothing moved, and reads it again after
// each change a follower's Fetch must carry: an append (log end), a new
// epoch's batch (last fetched epoch), a log start moved by DeleteRecords,
// the remote state's log start, a truncation.
func TestFetchPositionSinceFollowsEveryChange(t *testing.T) {
	r := leaderWithEpochs(t, 5, []int32{0}, 0)
	p := r.FetchPositionSince(FetchPos{})
	if p.FetchOffset != 5 || p.LogStart != 0 || p.LastFetchedEpoch != 0 {
		t.Fatalf("first read: %+v", p)
	}
	if again := r.FetchPositionSince(p); again != p {
		t.Fatalf("nothing moved, got %+v for %+v", again, p)
	}
	check := func(what string, offset, logStart int64, epoch int32) {
		t.Helper()
		p = r.FetchPositionSince(p)
		if p.FetchOffset != offset || p.LogStart != logStart || p.LastFetchedEpoch != epoch {
			t.Fatalf("%s: %+v, want offset %d, log start %d, epoch %d", what, p, offset, logStart, epoch)
		}
		if again := r.FetchPositionSince(p); again != p {
			t.Fatalf("%s, then nothing: %+v for %+v", what, again, p)
		}
	}
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	check("an append", 8, 0, 0)
	r.SetLeadership(true, 2)
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
		t.Fatal(err)
	}
	check("a new epoch's batch", 10, 0, 2)
	r.mu.Lock()
	r.setHW(10)
	r.mu.Unlock()
	if _, err := r.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	check("DeleteRecords", 10, 4, 2)
	r.SetRemoteState(RemoteState{LogStart: 1, CopiedNext: 4})
	check("a remote log start below the local one", 10, 1, 2)
	r.SetRemoteState(RemoteState{LogStart: 1, CopiedNext: 4})
	if again := r.FetchPositionSince(p); again != p {
		t.Fatalf("the same remote state again: %+v for %+v", again, p)
	}
	if err := r.TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	check("a truncation", 8, 1, 0)
}
