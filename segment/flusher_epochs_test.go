package segment

import (
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestFlusherWaitsForTheWriterToSaveAnEpoch: a rolled segment holding a new
// leader epoch's first batches, synced by the flusher while the writer lock
// is held. The flusher may not write the epoch checkpoint then (it never
// waits for the writer), so it raises the recovery point only to the
// epoch's start and keeps the job; once the writer lets go it writes the
// checkpoint and raises the recovery point to the segment's end.
func TestFlusherWaitsForTheWriterToSaveAnEpoch(t *testing.T) {
	entered, release := blockSyncs(t)
	fs := newCrashFS(t)
	l := openLog(t, crashDir, crashConfig(fs))
	defer l.Close()
	defer release()
	b := buildBatch(t, batchSpec{records: 3, valueSize: 100})
	mustAppend(t, l, b, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	start := l.LogEndOffset()
	mustAppend(t, l, b, 1) // a new epoch's first batch
	end := l.LogEndOffset()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	waitEntered(t, entered, 0)
	l.writer.Lock() // a busy writer
	release()
	if err := proctest.WaitFor(5*time.Second, func() bool { return l.RecoveryPoint() == start }); err != nil {
		l.writer.Unlock()
		t.Fatalf("recovery point %d with the writer busy, want the epoch's start %d", l.RecoveryPoint(), start)
	}
	if _, ok := l.unsavedEpochFrom(); !ok {
		l.writer.Unlock()
		t.Fatal("the checkpoint was written while the writer held its lock")
	}
	l.writer.Unlock()
	if err := proctest.WaitFor(5*time.Second, func() bool { return l.RecoveryPoint() == end }); err != nil {
		t.Fatalf("recovery point %d after the writer let go, want the segment's end %d", l.RecoveryPoint(), end)
	}
	disk, err := readEpochCheckpoint(fs, crashDir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: start}}; !slices.Equal([]EpochEntry(disk), want) {
		t.Fatalf("checkpoint %v, want %v", disk, want)
	}
}
