package segment

import (
	"slices"
	"testing"
)

// TestEmptyLogKeepsEpochAcrossReopens: a log that is empty above offset 0
// (reset to the remote tail, or every record deleted up to the log end)
// holds one epoch entry, the epoch in force at its start, which starts at
// the log end. Reopening it, cleanly or after a crash, any number of times
// with no append in between must keep that entry: an OffsetForLeaderEpoch
// answer from the replica depends on it.
func TestEmptyLogKeepsEpochAcrossReopens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean bool
	}{{"clean", true}, {"crash", false}} {
		t.Run("reset/"+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _, _ := resetFixture(t, dir)
			if err := l.ResetTo(1000, remoteEpochs); err != nil {
				t.Fatal(err)
			}
			checkReopens(t, dir, l, tc.clean, 1000, []EpochEntry{{Epoch: 4, StartOffset: 1000}})
		})
		t.Run("deleted-to-end/"+tc.name, func(t *testing.T) {
			// Records deleted up to the log end (DeleteRecords at the HW):
			// the active segment stays, the log start moves to its end.
			dir := t.TempDir()
			l, _, _ := resetFixture(t, dir)
			leo := l.LogEndOffset()
			if _, err := l.DeleteSegmentsBefore(leo); err != nil {
				t.Fatal(err)
			}
			checkReopens(t, dir, l, tc.clean, leo, []EpochEntry{{Epoch: 2, StartOffset: leo}})
		})
	}
}

// checkReopens checks l's offsets and epochs, then closes and reopens it
// three times with no append and checks them again each time; it closes
// the last log it opened.
func checkReopens(t *testing.T, dir string, l *Log, clean bool, at int64, want []EpochEntry) {
	t.Helper()
	for i := 0; ; i++ {
		if l.LogStartOffset() != at || l.LogEndOffset() != at {
			t.Fatalf("open %d: log [%d, %d), want empty at %d", i, l.LogStartOffset(), l.LogEndOffset(), at)
		}
		if got := l.Epochs(); !slices.Equal(got, want) {
			t.Fatalf("open %d: epochs %v, want %v", i, got, want)
		}
		if e, off := l.EndOffsetForEpoch(want[len(want)-1].Epoch); e != want[len(want)-1].Epoch || off != at {
			t.Fatalf("open %d: end offset for epoch %d: %d, %d", i, want[len(want)-1].Epoch, e, off)
		}
		if i == 3 {
			l.Close()
			return
		}
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			l.Flush()
			l.closeForCrashTest()
		}
		l = openLog(t, dir, testConfig(newFakeClock()))
	}
}
