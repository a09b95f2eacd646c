package segment

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// abortFixture is a log whose first segment holds two aborted
// transactions' ABORT markers (producers 1 and 2, offsets 1 and 3) with
// their .txnindex entries, and the cleaned bytes of that segment in which
// producer 1's marker became an empty batch, as compaction leaves it.
func abortFixture(t *testing.T, dir string, cfg Config) (l *Log, cleaned []byte) {
	t.Helper()
	l = openLog(t, dir, cfg)
	abort := func(pid int64) []byte {
		b, err := batch.BuildEndTxnMarker(nil, pid, 0, testTs0, batch.EndTxnMarker{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0) // 0
	mustAppend(t, l, abort(1), 0)                             // 1
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0) // 2
	mustAppend(t, l, abort(2), 0)                             // 3
	for _, a := range []AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2},
		{ProducerID: 2, FirstOffset: 2, LastOffset: 3, LastStableOffset: 4},
	} {
		if err := l.AppendAbortedTxn(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0) // 4, active
	seg, err := l.ReadBytes(0, 1<<20, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	err = batch.Split(seg, func(h *batch.Header, raw []byte) error {
		if h.BaseOffset == 1 {
			raw = batch.EmptyOutsideTxn(raw)
		}
		cleaned = append(cleaned, raw...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, cleaned
}

// abortMarkersLeft returns the producers of the ABORT markers in l.
func abortMarkersLeft(t *testing.T, l *Log) []int64 {
	t.Helper()
	var pids []int64
	err := batch.Split(readAll(t, l, 0), func(h *batch.Header, raw []byte) error {
		if m, ok, err := batch.ParseEndTxnMarker(raw); err == nil && ok && !m.Commit {
			pids = append(pids, h.ProducerID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// TestReplaceSegmentDropsTxnEntriesWithTheirMarkers: a cleaned segment
// that lost an ABORT marker loses its .txnindex entry, on disk and in
// memory, and keeps the entries of the markers left; with every marker
// gone the .txnindex file goes.
func TestReplaceSegmentDropsTxnEntriesWithTheirMarkers(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l, cleaned := abortFixture(t, dir, cfg)
	defer l.Close()
	if err := l.ReplaceSegment(0, cleaned); err != nil {
		t.Fatal(err)
	}
	if got := abortMarkersLeft(t, l); len(got) != 1 || got[0] != 2 {
		t.Fatalf("ABORT markers left %v, want producer 2's", got)
	}
	if got := l.SegmentAbortedTxns(0); len(got) != 1 || got[0].ProducerID != 2 {
		t.Fatalf("entries in memory %+v, want producer 2's alone", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, fileName(0, txnIndexSuffix)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeTxnIndex(b); err != nil || len(got) != 1 || got[0].ProducerID != 2 {
		t.Fatalf(".txnindex on disk %+v %v, want producer 2's alone", got, err)
	}
	// The second marker goes too: no entry, no file.
	seg, err := l.ReadBytes(0, 1<<20, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	var none []byte
	batch.Split(seg, func(h *batch.Header, raw []byte) error {
		if h.BaseOffset == 3 {
			raw = batch.EmptyOutsideTxn(raw)
		}
		none = append(none, raw...)
		return nil
	})
	if err := l.ReplaceSegment(0, none); err != nil {
		t.Fatal(err)
	}
	if got := l.SegmentAbortedTxns(0); len(got) != 0 {
		t.Fatalf("entries in memory %+v, want none", got)
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(0, txnIndexSuffix))); !os.IsNotExist(err) {
		t.Fatalf(".txnindex without entries: %v", err)
	}
}

// TestReplaceSegmentCrashAtEachStep stops ReplaceSegment after each durable
// step, as a kill there would, and reopens: the segment is the old one
// with its old .txnindex or the cleaned one with the new, and never has
// an entry whose ABORT marker is gone.
func TestReplaceSegmentCrashAtEachStep(t *testing.T) {
	defer func() { cleanCrashHook = nil }()
	errCrash := errors.New("simulated crash")
	steps := []string{"txnindex swap written", "log swapped", "txnindex in place"}
	for _, stop := range steps {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(newFakeClock())
			l, cleaned := abortFixture(t, dir, cfg)
			cleanCrashHook = func(step string) error {
				if step == stop {
					return errCrash
				}
				return nil
			}
			err := l.ReplaceSegment(0, cleaned)
			cleanCrashHook = nil
			if !errors.Is(err, errCrash) {
				t.Fatalf("ReplaceSegment did not stop at %q: %v", stop, err)
			}
			l.closeForCrashTest()
			l = openLog(t, dir, cfg)
			defer l.Close()
			markers := abortMarkersLeft(t, l)
			entries := l.SegmentAbortedTxns(0)
			want := 1 // committed at the .log.swap: the cleaned segment
			if stop == "txnindex swap written" {
				want = 2 // before it: the old segment
			}
			if len(markers) != want || len(entries) != want {
				t.Fatalf("after a crash at %q: markers of %v and entries %+v, want %d of each", stop, markers, entries, want)
			}
			for i, a := range entries {
				if a.ProducerID != markers[i] {
					t.Fatalf("entry %+v without its marker (markers of %v)", a, markers)
				}
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if filepath.Ext(e.Name()) == swapSuffix || filepath.Ext(e.Name()) == cleanedSuffix {
					t.Errorf("stray %s left after open", e.Name())
				}
			}
		})
	}
}
