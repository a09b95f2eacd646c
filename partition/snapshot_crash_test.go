package partition

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/vfs"
)

// TestCrashAfterOpenRemovedSnapshotAboveLogEnd: Open removes the producer
// snapshots above the recovered log end (the log no longer reaches them).
// That removal must be durable before the log grows past them again: a
// snapshot that comes back after a later crash, below the new log end, is
// a state of batches the log no longer holds, and recovery would load it
// and replay only what follows it.
//
// The image it starts from holds a valid snapshot at 12 and a log that
// ends at 6: what a crash leaves when the kernel wrote back a roll's
// unsynced snapshot, a later fsync of the partition's directory made its
// entry durable, and the log's unflushed tail was lost (the crashable
// filesystem drops every unsynced byte, so the test writes that snapshot
// durably). Then the replica opens as the leader and another producer's
// batches take the log past 12, with a flush; the filesystem is crashed
// before each fsync and after each step, and each image must recover the
// producer state that a replay of its whole log gives.
//
// In a new leader epoch the first append writes the leader-epoch
// checkpoint, whose directory fsync also makes the removal durable; in
// the epoch the log already ends in nothing else fsyncs the directory
// before the flush has made the new batches durable.
func TestCrashAfterOpenRemovedSnapshotAboveLogEnd(t *testing.T) {
	for _, epoch := range []int32{0, 1} {
		t.Run(fmt.Sprintf("leader epoch %d", epoch), func(t *testing.T) { testCrashAfterOpenRemovedSnapshot(t, epoch) })
	}
}

func testCrashAfterOpenRemovedSnapshot(t *testing.T, epoch int32) {
	c := crashCkpt{"shared checkpoint", true} // as the broker runs: not in the partition's directory
	mem := newPartitionCrashFS(t)
	ts := time.Now().UnixMilli()
	r, ck, err := c.open(t, mem)
	if err != nil {
		t.Fatal(err)
	}
	r.SetLeadership(true, 0)
	for i := range 4 {
		if _, err := r.AppendLeader(build(t, idem(7, int32(3*i), ts), 3)); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := r.Log().Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if end := r.Log().LogEndOffset(); end != 12 {
		t.Fatalf("log end %d, want 12", end)
	}
	r.appendMu.Lock()
	err = r.producers.WriteSnapshot(mem, crashDir, 12, 0)
	r.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	start := mem.CrashClone() // the log ends at 6 (its flush), the snapshot at 12 stays
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ck.WriteNow(); err != nil {
		t.Fatal(err)
	}

	// A failed fsync of the removal fails Open: the replica must not run
	// on a removal that a crash could undo.
	failing := start.CrashClone()
	syncErr := errors.New("injected directory fsync failure")
	_, _, err = c.open(t, vfs.WithErrors(failing, func(op vfs.Op) error {
		if _, err := failing.Stat(snapshotName(crashDir, 12)); op.Kind == vfs.OpSync && op.Path == crashDir && err != nil {
			return syncErr
		}
		return nil
	}))
	if !errors.Is(err, syncErr) {
		t.Fatalf("Open with the removal's directory fsync failing: %v, want the fsync's error", err)
	}

	var (
		mu     sync.Mutex
		images []*vfs.MemFS
		at     []string
		phase  = "open"
	)
	fsys := vfs.WithErrors(start, func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			mu.Lock()
			images, at = append(images, start.CrashClone()), append(at, "before fsync of "+op.Path+" in "+phase)
			mu.Unlock()
		}
		return nil
	})
	step := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		phase = what
		images, at = append(images, start.CrashClone()), append(at, "after "+what)
	}
	r, ck, err = c.open(t, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if end := r.Log().LogEndOffset(); end != 6 {
		t.Fatalf("the crash image's log ends at %d, want 6", end)
	}
	if _, err := start.Stat(snapshotName(crashDir, 12)); err == nil {
		t.Fatal("Open kept the snapshot at 12, above the log end 6")
	}
	step("open")
	r.SetLeadership(true, epoch)
	for i := range 4 {
		if _, err := r.AppendLeader(build(t, idem(8, int32(3*i), ts), 3)); err != nil {
			t.Fatal(err)
		}
		step("append")
	}
	if err := r.Log().Flush(); err != nil {
		t.Fatal(err)
	}
	step("flush")
	if end := r.Log().LogEndOffset(); end != 18 {
		t.Fatalf("log end %d, want 18", end)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ck.WriteNow(); err != nil {
		t.Fatal(err)
	}

	for i, img := range images {
		rr, _, err := c.open(t, img)
		if err != nil {
			t.Fatalf("%s: open after crash: %v", at[i], err)
		}
		replayed := NewProducerState()
		rr.appendMu.Lock()
		err = rr.replayProducers(replayed, rr.Log().LogStartOffset())
		got := rr.producers.Encode()
		rr.appendMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		snapshots := listSnapshots(img, crashDir)
		end := rr.Log().LogEndOffset()
		rr.Close()
		if !bytes.Equal(got, replayed.Encode()) {
			t.Fatalf("%s: the producer state recovered from the snapshots %v differs from a replay of the log (0 to %d)", at[i], snapshots, end)
		}
	}
	t.Logf("%d crash images recovered", len(images))
}
