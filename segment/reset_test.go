package segment

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// resetFixture writes 30 batches of 3 records over several 2 KiB segments
// in epochs 0, 1 and 2, and returns the log, its bytes and its epochs.
func resetFixture(t *testing.T, dir string) (*Log, []byte, []EpochEntry) {
	t.Helper()
	cfg := testConfig(newFakeClock())
	cfg.SegmentBytes = 2 << 10
	l := openLog(t, dir, cfg)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 3, firstTs: int64(i), valueSize: 100}), int32(i/10))
	}
	if n := len(l.Segments()); n < 4 {
		t.Fatalf("fixture has %d segments, want several", n)
	}
	if err := l.Flush(); err != nil { // the history durable, as in a log that ran a while
		t.Fatal(err)
	}
	return l, readAll(t, l, 0), l.Epochs()
}

// remoteEpochs is the history a leader would have uploaded with the segment
// ending at 999: epochs 0..2 as in the fixture, then epoch 4 from 500.
var remoteEpochs = []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 30}, {Epoch: 2, StartOffset: 60}, {Epoch: 4, StartOffset: 500}}

func TestResetTo(t *testing.T) {
	dir := t.TempDir()
	l, _, _ := resetFixture(t, dir)
	if err := l.ResetTo(1000, append(slices.Clone(remoteEpochs), EpochEntry{Epoch: 7, StartOffset: 1000})); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, leo int64) {
		t.Helper()
		if l.LogStartOffset() != 1000 || l.LogEndOffset() != leo {
			t.Fatalf("log start %d, end %d; want 1000, %d", l.LogStartOffset(), l.LogEndOffset(), leo)
		}
		// The history cut at the new start: the epoch in force at 1000
		// (entries from 1000 on are the caller's to append, not history).
		want := []EpochEntry{{Epoch: 4, StartOffset: 1000}}
		if leo > 1000 {
			want = append(want, EpochEntry{Epoch: 5, StartOffset: 1000 + 3})
		}
		if got := l.Epochs(); !slices.Equal(got, want) {
			t.Fatalf("epochs %v, want %v", got, want)
		}
		segs := l.Segments()
		if segs[0].BaseOffset != 1000 {
			t.Fatalf("first segment at %d, want 1000", segs[0].BaseOffset)
		}
		if _, err := l.Read(999, 1<<20, 1<<40, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below the new start: %v", err)
		}
	}
	check(l, 1000)
	if got, _ := filepath.Glob(filepath.Join(dir, "0000000000000000000*.log")); len(got) != 0 {
		t.Fatalf("old segment files left: %v", got)
	}
	// The log goes on at 1000: the fetched epoch 4 batch, then epoch 5.
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 4)
	mustAppend(t, l, buildBatch(t, batchSpec{records: 2, firstTs: 1}), 5)
	data := readAll(t, l, 1000)
	if rbs := decodeBatches(t, data); len(rbs) != 2 || rbs[0].FirstOffset != 1000 || rbs[1].FirstOffset != 1003 {
		t.Fatalf("batches after the reset: %+v", rbs)
	}
	check(l, 1005)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l = openLog(t, dir, testConfig(newFakeClock()))
		check(l, 1005)
		if !bytes.Equal(readAll(t, l, 1000), data) {
			t.Fatalf("reopened (clean %v): bytes differ", clean)
		}
		l.Flush()
		l.closeForCrashTest()
	}
}

func TestResetToRejects(t *testing.T) {
	l, _, _ := resetFixture(t, t.TempDir())
	defer l.Close()
	if err := l.ResetTo(-1, nil); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("negative offset: %v", err)
	}
	if err := l.ResetTo(1000, []EpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 1, StartOffset: 5}}); !errors.Is(err, ErrCorruption) {
		t.Fatalf("unordered history: %v", err)
	}
	if l.LogEndOffset() != 90 {
		t.Fatalf("a refused reset changed the log: end %d", l.LogEndOffset())
	}
	l.Close()
	if err := l.ResetTo(1000, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed log: %v", err)
	}
}

// TestResetToCrashAtEachStep stops ResetTo after each of its durable steps,
// as a crash there would, and reopens the directory: the log must be the
// old one (a prefix of its segments), empty, or the reset one, never a mix
// (the new segment with the old history, or old data with the new one); and
// a second ResetTo from there completes.
func TestResetToCrashAtEachStep(t *testing.T) {
	defer func() { resetCrashHook = nil }()
	errCrash := errors.New("simulated crash")
	for stop := 1; ; stop++ {
		dir := t.TempDir()
		l, oldData, oldEpochs := resetFixture(t, dir)
		nsegs := len(l.Segments())
		var steps []string
		resetCrashHook = func(step string) error {
			steps = append(steps, step)
			if len(steps) == stop {
				return errCrash
			}
			return nil
		}
		err := l.ResetTo(1000, remoteEpochs)
		resetCrashHook = nil
		if err == nil {
			if stop <= nsegs+3 {
				t.Fatalf("ResetTo passed %d steps (%v) without stopping at step %d", len(steps), steps, stop)
			}
			l.Close()
			break
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("step %d: %v", stop, err)
		}
		if err := l.Flush(); !errors.Is(err, ErrClosed) {
			t.Fatalf("after a failed reset the log is still usable: %v", err)
		}
		l.closeForCrashTest()
		step := steps[len(steps)-1]
		name := fmt.Sprintf("crash after step %d (%s)", stop, step)

		r := openLog(t, dir, testConfig(newFakeClock()))
		switch step {
		case "renamed", "history":
			// The old log's oldest segments, or nothing; its history
			// cut at the new end.
			leo := r.LogEndOffset()
			kept := nsegs - stop
			if step == "history" {
				kept = 0
			}
			if got := len(r.Segments()); leo > 0 && got != kept {
				t.Fatalf("%s: %d segments, want the oldest %d", name, got, kept)
			}
			data := readAll(t, r, 0)
			if !bytes.HasPrefix(oldData, data) || (kept > 0) != (leo > 0) {
				t.Fatalf("%s: %d bytes up to %d, not a prefix of the old log with %d segments", name, len(data), leo, kept)
			}
			want := append(epochCache(nil), oldEpochs...)
			want.truncateFromEnd(leo)
			if leo == 0 && step == "renamed" {
				// Every segment gone, the old history left: an empty
				// log at 0 keeps the epoch in force at its start, the
				// old log's first. After "history" the new history
				// (from 1000) is beside it and goes.
				want = epochCache{oldEpochs[0]}
			}
			if got := r.Epochs(); !slices.Equal(got, []EpochEntry(want)) {
				t.Fatalf("%s: epochs %v, want %v", name, got, want)
			}
		default:
			if r.LogStartOffset() != 1000 || r.LogEndOffset() != 1000 {
				t.Fatalf("%s: log [%d, %d), want the reset log at 1000", name, r.LogStartOffset(), r.LogEndOffset())
			}
			if got := r.Epochs(); !slices.Equal(got, []EpochEntry{{Epoch: 4, StartOffset: 1000}}) {
				t.Fatalf("%s: epochs %v, want the reset history", name, got)
			}
		}
		if err := r.ResetTo(1000, remoteEpochs); err != nil {
			t.Fatalf("%s: completing the reset: %v", name, err)
		}
		if r.LogEndOffset() != 1000 || !slices.Equal(r.Epochs(), []EpochEntry{{Epoch: 4, StartOffset: 1000}}) {
			t.Fatalf("%s: completed reset: end %d epochs %v", name, r.LogEndOffset(), r.Epochs())
		}
		r.Close()
	}
}
