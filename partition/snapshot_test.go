package partition

import (
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// snapshotProducers reads the snapshot at offset in dir: the producer ids
// with their last sequence.
func snapshotProducers(t *testing.T, dir string, offset int64) map[int64]int32 {
	t.Helper()
	b, err := os.ReadFile(snapshotName(dir, offset))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := DecodeProducerState(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int32{}
	for pid, e := range ps.producers {
		out[pid] = e.lastSeq()
	}
	return out
}

// Every segment roll leaves a snapshot of producer state as of the new
// segment's base, on the leader and on a follower that appends many batches
// in one fetch (so that it rolls in the middle of an append): the snapshot
// holds exactly the producers whose batches end at or below it. Snapshots
// stay as long as their segments, and retention prunes them.
func TestSnapshotAtEveryRollHoldsTheBatchesBelowIt(t *testing.T) {
	cfg := map[string]string{"min.insync.replicas": "1", "segment.bytes": "500"}
	leader, follower := openTest(t, t.TempDir(), cfg, nil), openFollower(t, t.TempDir(), cfg, nil)
	t.Cleanup(func() { leader.Close(); follower.Close() })
	leader.SetLeadership(true, 1)
	follower.SetLeadership(false, 1)
	leader.SetAssignment(1, []int32{1, 2}, []int32{1})
	follower.SetAssignment(2, []int32{1, 2}, []int32{1})

	// Producer i writes batch i (5 records, sequence 0-4); about 3 batches a segment.
	const producers = 24
	ends := map[int64]int64{} // producer id -> next offset after its batch
	now := time.Now().UnixMilli()
	for pid := int64(1); pid <= producers; pid++ {
		if _, err := leader.AppendLeader(build(t, idem(pid, 0, now), 5)); err != nil {
			t.Fatal(err)
		}
		ends[pid] = leader.Log().LogEndOffset()
	}
	// The whole log in one follower append (a read stops at a segment's end).
	var b []byte
	for off := int64(0); off < leader.Log().LogEndOffset(); {
		r, err := leader.Log().ReadBytes(off, 1<<20, leader.Log().LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		batch.Split(r, func(h *batch.Header, _ []byte) error { off = h.NextOffset(); return nil })
		b = append(b, r...)
	}
	if err := follower.AppendFollower(b, leader.HighWatermark()); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Replica{leader, follower} {
		segs := r.Log().Segments()
		snaps := listSnapshots(vfs.Default, r.dir)
		if len(segs) < 4 || len(snaps) != len(segs)-1 {
			t.Fatalf("replica %d: %d segments, snapshots at %v: want one at each roll", r.mu.self, len(segs), snaps)
		}
		for i, off := range snaps {
			if off != segs[i+1].BaseOffset {
				t.Fatalf("snapshot at %d, segment %d starts at %d", off, i+1, segs[i+1].BaseOffset)
			}
			want := map[int64]int32{}
			for pid, end := range ends {
				if end <= off {
					want[pid] = 4
				}
			}
			if got := snapshotProducers(t, r.dir, off); !maps.Equal(got, want) {
				t.Fatalf("snapshot at %d holds producers %v, want %v", off, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
		}
	}

	// Deleting records below the fourth segment keeps the snapshots from
	// its base up (the newest at or below the log start, which recovery
	// replays from, is the one at its base).
	segs := leader.Log().Segments()
	start, err := leader.DeleteRecordsBefore(segs[3].BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, s := range segs[3:] {
		want = append(want, s.BaseOffset)
	}
	if got := listSnapshots(vfs.Default, leader.dir); !slices.Equal(got, want) || start != segs[3].BaseOffset {
		t.Fatalf("after deleting below %d: snapshots %v, want %v", start, got, want)
	}
}
