package partition

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/vfs"
)

// TestResetFromRemoteStateAtOffset checks the state a reset follower holds
// before it fetches anything, through two reopens and a promotion: the
// epoch in force at the reset offset, and the producers exactly as of that
// offset: a retry of the batch just below it is a duplicate answered with
// its original offsets, the next sequence after that batch is accepted,
// and a sequence the leader wrote only above the offset is a gap.
func TestResetFromRemoteStateAtOffset(t *testing.T) {
	leader, tail, _, _ := tieredLeader(t)
	// The batch just below the reset offset is producer 9's three records
	// [tail.Offset-3, tail.Offset-1]: 9's batch i starts at 3i+2 for i >= 2
	// (producer 10's two records sit at 6 and 7).
	i := int32((tail.Offset - 3 - 2) / 3)
	if 3*int64(i)+2 != tail.Offset-3 {
		t.Fatalf("reset offset %d is not after one of producer 9's batches", tail.Offset)
	}
	if leader.Log().LogEndOffset() < tail.Offset+6 {
		t.Fatalf("the leader wrote too little above the reset offset %d", tail.Offset)
	}
	now := time.Now().UnixMilli()

	dir := t.TempDir()
	follower := openFollower(t, dir, nil, nil)
	follower.SetLeadership(false, 3)
	if err := follower.ResetFromRemote(tail); err != nil {
		t.Fatal(err)
	}
	// The tail's history from the partition's log start (0): the leader
	// wrote everything in epoch 3.
	want := []segment.EpochEntry{{Epoch: 3, StartOffset: 0}}
	for reopen := range 3 {
		if got := follower.Log().Epochs(); !slices.Equal(got, want) {
			t.Fatalf("after %d reopens: epochs %v, want %v", reopen, got, want)
		}
		if err := follower.Close(); err != nil {
			t.Fatal(err)
		}
		follower = openFollower(t, dir, nil, nil)
	}
	defer func() { follower.Close() }()
	l := follower.Log()
	if l.LogStartOffset() != tail.Offset || l.LogEndOffset() != tail.Offset {
		t.Fatalf("reopened: log [%d, %d), want empty at %d", l.LogStartOffset(), l.LogEndOffset(), tail.Offset)
	}
	if e, off := l.EndOffsetForEpoch(3); e != 3 || off != tail.Offset {
		t.Fatalf("end of epoch 3: %d at %d, want 3 at %d", e, off, tail.Offset)
	}

	follower.SetLeadership(true, 4)
	res, err := follower.AppendLeader(build(t, idem(9, 3*i, now), 3))
	if err != nil || !res.Duplicate || res.BaseOffset != tail.Offset-3 || res.LastOffset != tail.Offset-1 {
		t.Fatalf("retry of the batch just below the reset offset: %+v %v, want a duplicate at [%d, %d]",
			res, err, tail.Offset-3, tail.Offset-1)
	}
	if l.LogEndOffset() != tail.Offset {
		t.Fatalf("a duplicate was written: log end %d", l.LogEndOffset())
	}
	// 9's next batch on the leader (sequence 3i+3) is above the offset: the
	// follower has not seen it, so 3i+6 is a gap and 3i+3 the next.
	if _, err := follower.AppendLeader(build(t, idem(9, 3*i+6, now), 3)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a sequence written only above the reset offset: %v", err)
	}
	res, err = follower.AppendLeader(build(t, idem(9, 3*i+3, now), 3))
	if err != nil || res.Duplicate || res.BaseOffset != tail.Offset {
		t.Fatalf("the next sequence: %+v %v", res, err)
	}
	// Epoch 4 starts at the reset offset, after the history of the remote
	// data; the end of epoch 3 is answered right: the reset offset.
	if got := l.Epochs(); !slices.Equal(got, []segment.EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 4, StartOffset: tail.Offset}}) {
		t.Fatalf("epochs after leading: %v", got)
	}
	if e, off := l.EndOffsetForEpoch(3); e != 3 || off != tail.Offset {
		t.Fatalf("end of epoch 3 after leading: %d at %d, want 3 at %d", e, off, tail.Offset)
	}
}

// TestResetFromRemoteFailedKeepsSnapshots: a reset that fails after its
// snapshot is written (here the epoch history is refused) leaves the old
// log and every one of its snapshots, one per segment end, which tiering
// uploads with each segment.
func TestResetFromRemoteFailedKeepsSnapshots(t *testing.T) {
	leader, tail, _, _ := tieredLeader(t)
	dir := t.TempDir()
	follower := openFollower(t, dir, map[string]string{"segment.bytes": "1024"}, nil)
	defer func() { follower.Close() }()
	follower.SetLeadership(false, 3)
	end := leader.Log().LogEndOffset()
	for follower.Log().LogEndOffset() < end {
		b, err := leader.Log().ReadBytes(follower.Log().LogEndOffset(), 1<<20, end, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := follower.AppendFollower(b, end); err != nil {
			t.Fatal(err)
		}
	}
	before := listSnapshots(vfs.Default, dir)
	if len(before) <= 3 {
		t.Fatalf("the follower has %d snapshots, want more than 3", len(before))
	}
	bad := tail
	bad.Offset = end + 100
	bad.Epochs = []segment.EpochEntry{{Epoch: 3, StartOffset: 50}, {Epoch: 2, StartOffset: 60}}
	if err := follower.ResetFromRemote(bad); !errors.Is(err, segment.ErrCorruption) {
		t.Fatalf("reset with a disordered history: %v", err)
	}
	if follower.Log().LogEndOffset() != end {
		t.Fatalf("a refused reset moved the log end to %d", follower.Log().LogEndOffset())
	}
	after := listSnapshots(vfs.Default, dir)
	for _, off := range before {
		if !slices.Contains(after, off) {
			t.Fatalf("snapshot at %d removed by a refused reset: %v, before %v", off, after, before)
		}
	}
}
