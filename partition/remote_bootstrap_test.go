package partition

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/vfs"
)

// tieredLeader is a leader whose idempotent producer 9 wrote 40 batches of
// 3 records into small segments, and the remote tail a follower would take
// at its second-to-last segment boundary: the snapshot the leader wrote at
// that roll (the one tiering uploads) and its epochs. Producer 10 wrote
// its one batch early, below that boundary; last is 9's last batch and
// early 10's.
func tieredLeader(t *testing.T) (leader *Replica, tail RemoteTail, last, early []byte) {
	t.Helper()
	now := time.Now().UnixMilli()
	cfg := map[string]string{"segment.bytes": "1024", "min.insync.replicas": "1"}
	leader = openTest(t, t.TempDir(), cfg, nil)
	t.Cleanup(func() { leader.Close() })
	leader.SetLeadership(true, 3)
	for i := range 40 {
		if i == 2 {
			early = build(t, idem(10, 0, now), 2)
			if _, err := leader.AppendLeader(slices.Clone(early)); err != nil {
				t.Fatal(err)
			}
		}
		last = build(t, idem(9, int32(3*i), now), 3)
		if _, err := leader.AppendLeader(slices.Clone(last)); err != nil {
			t.Fatal(err)
		}
	}
	segs := leader.Log().Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	at := segs[len(segs)-2].BaseOffset
	path, snapAt, ok := leader.SnapshotAtOrBelow(at)
	if !ok || snapAt != at {
		t.Fatalf("no snapshot at the roll to %d (%d %v)", at, snapAt, ok)
	}
	snap, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return leader, RemoteTail{Offset: at, LogStart: 0, Epochs: leader.Log().Epochs(), ProducerSnapshot: snap}, last, early
}

func TestResetFromRemote(t *testing.T) {
	leader, tail, last, early := tieredLeader(t)
	dir := t.TempDir()
	follower := openFollower(t, dir, nil, nil)
	defer func() { follower.Close() }()
	follower.SetLeadership(false, 3)

	if err := leader.ResetFromRemote(tail); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a leader reset: %v", err)
	}
	bad := tail
	bad.ProducerSnapshot = []byte("not a snapshot")
	if err := follower.ResetFromRemote(bad); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("bad snapshot: %v", err)
	}
	if err := follower.ResetFromRemote(tail); err != nil {
		t.Fatal(err)
	}
	if err := follower.ResetFromRemote(tail); !errors.Is(err, ErrResetNotAhead) {
		t.Fatalf("a second reset to the same offset: %v", err)
	}
	l := follower.Log()
	if l.LogStartOffset() != tail.Offset || l.LogEndOffset() != tail.Offset || follower.HighWatermark() != tail.Offset {
		t.Fatalf("after the reset: start %d end %d hw %d, want %d", l.LogStartOffset(), l.LogEndOffset(), follower.HighWatermark(), tail.Offset)
	}
	if follower.LogStartOffset() != 0 {
		t.Fatalf("partition log start %d, want the leader's 0", follower.LogStartOffset())
	}
	// The tail's history from the partition's log start (0): the leader
	// wrote everything in epoch 3.
	want := []segment.EpochEntry{{Epoch: 3, StartOffset: 0}}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}

	// Fetch the rest from the leader, from the reset offset.
	for l.LogEndOffset() < leader.Log().LogEndOffset() {
		off := l.LogEndOffset()
		b, err := leader.Log().ReadBytes(off, 1<<20, leader.Log().LogEndOffset(), true)
		if err != nil || len(b) == 0 {
			t.Fatalf("leader read at %d: %d bytes, %v", off, len(b), err)
		}
		if err := follower.AppendFollower(b, leader.HighWatermark()); err != nil {
			t.Fatal(err)
		}
		if got, _ := l.ReadBytes(off, 1<<20, l.LogEndOffset(), true); !bytes.Equal(got, b) {
			t.Fatalf("follower bytes at %d differ from the leader's", off)
		}
	}

	// Restarted and promoted, it knows the producers from the snapshot: a
	// retry of producer 10's batch, written only below the reset offset,
	// or of 9's last batch is a duplicate; a gap is refused.
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	follower = openFollower(t, dir, nil, nil)
	follower.SetLeadership(true, 4)
	if got := follower.Log().Epochs(); got[0] != want[0] {
		t.Fatalf("epochs after reopen %v", got)
	}
	now := time.Now().UnixMilli()
	res, err := follower.AppendLeader(slices.Clone(early))
	if err != nil || !res.Duplicate || res.BaseOffset != 6 {
		t.Fatalf("retried batch of a producer seen only below the reset: %+v %v", res, err)
	}
	res, err = follower.AppendLeader(slices.Clone(last))
	if err != nil || !res.Duplicate || res.LastOffset != leader.Log().LogEndOffset()-1 {
		t.Fatalf("retried last batch: %+v %v", res, err)
	}
	if _, err := follower.AppendLeader(build(t, idem(9, 500, now), 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence gap: %v", err)
	}
	if _, err := follower.AppendLeader(build(t, idem(9, 120, now), 1)); err != nil {
		t.Fatalf("next sequence: %v", err)
	}
}

// TestResetFromRemoteSnapshotWithoutReset is the state a crash leaves
// between ResetFromRemote's two steps: the remote snapshot written, the old
// log untouched. Reopened, the replica must drop that snapshot (its log does
// not reach it) and rebuild the state of its own log.
func TestResetFromRemoteSnapshotWithoutReset(t *testing.T) {
	leader, tail, _, _ := tieredLeader(t)
	dir := t.TempDir()
	follower := openFollower(t, dir, nil, nil)
	follower.SetLeadership(false, 3)
	b, err := leader.Log().ReadBytes(0, 600, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.AppendFollower(b, 0); err != nil {
		t.Fatal(err)
	}
	oldEnd := follower.Log().LogEndOffset()
	ps, err := DecodeProducerState(tail.ProducerSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.WriteSnapshot(vfs.Default, dir, tail.Offset, 3); err != nil {
		t.Fatal(err)
	}
	follower.Log().Flush()
	follower.Close()
	follower = openFollower(t, dir, nil, nil)
	defer follower.Close()
	if follower.Log().LogEndOffset() != oldEnd {
		t.Fatalf("log end %d, want the old %d", follower.Log().LogEndOffset(), oldEnd)
	}
	if _, at, ok := follower.SnapshotAtOrBelow(1 << 40); ok && at > oldEnd {
		t.Fatalf("snapshot at %d kept beyond the log end %d", at, oldEnd)
	}
	follower.SetLeadership(true, 4)
	// The old log's producer state: the next sequence after its last batch.
	next := int32(oldEnd) - 2 // 3 records per batch for 9; 10's 2 records at offset 6
	if _, err := follower.AppendLeader(build(t, idem(9, next, time.Now().UnixMilli()), 1)); err != nil {
		t.Fatalf("sequence %d after the old log's end: %v", next, err)
	}
}
