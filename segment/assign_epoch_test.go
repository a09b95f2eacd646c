package segment

import (
	"errors"
	"slices"
	"testing"

	"github.com/shale-io/shale/segment/batch"

	"github.com/shale-io/shale/segment/vfs"
)

// checkEpochs checks the history in memory and, after a flush, in the
// checkpoint on disk (an epoch's entry reaches the file at the next flush,
// or when the flusher moves the recovery point past it).
func checkEpochs(t *testing.T, l *Log, want []EpochEntry) {
	t.Helper()
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	disk, err := readEpochCheckpoint(vfs.Default, l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if got := []EpochEntry(disk); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("checkpoint on disk %v, want %v", got, want)
	}
}

// TestAssignEpochAtLogEnd: a new leader's epoch enters the history at the
// log end before any write (Kafka's maybeAssignEpochStartOffset), and the
// checkpoint at the next flush; OffsetForLeaderEpoch places the new epoch and
// the epochs between at the log end; the first append in the epoch adds no
// second entry; an epoch not newer than the latest changes nothing.
func TestAssignEpochAtLogEnd(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
	defer l.Close()
	mustAppend(t, l, buildBatch(t, batchSpec{records: 5}), 1)
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}})
	if e, off := l.EndOffsetForEpoch(3); e != UndefinedEpoch || off != UndefinedEpochOffset {
		t.Fatalf("before the assignment, epoch 3: %d %d, want undefined", e, off)
	}

	changed, err := l.AssignEpoch(3)
	if err != nil || !changed {
		t.Fatalf("AssignEpoch(3): %v %v", changed, err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 5}})
	for _, c := range []struct {
		requested, epoch int32
		end              int64
	}{{3, 3, 5}, {2, 1, 5}, {1, 1, 5}, {4, UndefinedEpoch, UndefinedEpochOffset}} {
		if e, off := l.EndOffsetForEpoch(c.requested); e != c.epoch || off != c.end {
			t.Fatalf("epoch %d: %d %d, want %d %d", c.requested, e, off, c.epoch, c.end)
		}
	}

	for _, epoch := range []int32{3, 2, -1} {
		if changed, err := l.AssignEpoch(epoch); err != nil || changed {
			t.Fatalf("AssignEpoch(%d) after 3: %v %v, want no change", epoch, changed, err)
		}
	}
	info := mustAppend(t, l, buildBatch(t, batchSpec{records: 2}), 3)
	if info.FirstOffset != 5 {
		t.Fatalf("append at %d", info.FirstOffset)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 5}})
	if e, off := l.EndOffsetForEpoch(3); e != 3 || off != 7 {
		t.Fatalf("epoch 3 after a write: %d %d", e, off)
	}
	// Assigning twice without a write in between: the unwritten entry is
	// replaced, not kept below the new one.
	if _, err := l.AssignEpoch(5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AssignEpoch(6); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 5}, {Epoch: 6, StartOffset: 7}})
}

// TestAssignEpochReopen: the assignment is on disk once flushed. An empty
// log keeps it across reopens (the entry at its log
// start); a non-empty log drops an entry with no batch after it when it
// reopens, as Kafka's LogLoader does (truncateFromEnd(nextOffset)), and a
// replica that leads again assigns it again.
func TestAssignEpochReopen(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, testConfig(newFakeClock()))
		if _, err := l.AssignEpoch(2); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, []EpochEntry{{Epoch: 2, StartOffset: 0}})
		l.closeForCrashTest()
		l = openLog(t, dir, testConfig(newFakeClock()))
		defer l.Close()
		checkEpochs(t, l, []EpochEntry{{Epoch: 2, StartOffset: 0}})
		if e, off := l.EndOffsetForEpoch(2); e != 2 || off != 0 {
			t.Fatalf("epoch 2 after reopen: %d %d", e, off)
		}
		mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 2)
		checkEpochs(t, l, []EpochEntry{{Epoch: 2, StartOffset: 0}})
	})
	t.Run("non-empty", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, testConfig(newFakeClock()))
		mustAppend(t, l, buildBatch(t, batchSpec{records: 4}), 1)
		if _, err := l.AssignEpoch(2); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 4}})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, testConfig(newFakeClock()))
		defer l.Close()
		checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}})
		if changed, err := l.AssignEpoch(2); err != nil || !changed {
			t.Fatalf("AssignEpoch(2) after reopen: %v %v", changed, err)
		}
		checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 4}})
	})
}

// TestAssignEpochAfterReset: a log reset to the remote tail holds the epoch
// in force at its start; a leader elected on it replaces that entry with its
// own at the same offset, as its first append did before (and as Kafka's
// assign drops entries at or after the new start).
func TestAssignEpochAfterReset(t *testing.T) {
	dir := t.TempDir()
	l, _, _ := resetFixture(t, dir)
	defer l.Close()
	if err := l.ResetTo(1000, remoteEpochs); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 4, StartOffset: 1000}})
	if _, err := l.AssignEpoch(6); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 6, StartOffset: 1000}})
	for _, requested := range []int32{4, 5, 6} {
		if e, off := l.EndOffsetForEpoch(requested); e != requested || off != 1000 {
			t.Fatalf("epoch %d: %d %d, want %d 1000", requested, e, off, requested)
		}
	}
}

// TestDropUnwrittenEpochs: entries starting at the log end (an epoch
// assigned and never written in) go, on disk too; entries with batches
// after them stay; a truncation below the assigned start drops it as well.
func TestDropUnwrittenEpochs(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
	defer l.Close()
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 1)
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 2)
	if changed, err := l.DropUnwrittenEpochs(); err != nil || changed {
		t.Fatalf("nothing unwritten: %v %v", changed, err)
	}
	if _, err := l.AssignEpoch(4); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3}, {Epoch: 4, StartOffset: 6}})
	if changed, err := l.DropUnwrittenEpochs(); err != nil || !changed {
		t.Fatalf("DropUnwrittenEpochs: %v %v", changed, err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3}})
	if l.LatestEpoch() != 2 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	// A follower append of the new leader's batches, of epoch 3, after it.
	b := buildBatch(t, batchSpec{records: 2})
	batch.SetBaseOffset(b, 6)
	batch.SetPartitionLeaderEpoch(b, 3)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3}, {Epoch: 3, StartOffset: 6}})

	if _, err := l.AssignEpoch(5); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(3); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l, []EpochEntry{{Epoch: 1, StartOffset: 0}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AssignEpoch(7); !errors.Is(err, ErrClosed) {
		t.Fatalf("AssignEpoch on a closed log: %v", err)
	}
	if _, err := l.DropUnwrittenEpochs(); !errors.Is(err, ErrClosed) {
		t.Fatalf("DropUnwrittenEpochs on a closed log: %v", err)
	}
}
