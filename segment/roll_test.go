package segment

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRollTriggers(t *testing.T) {
	one := func(t *testing.T) []byte { return buildBatch(t, batchSpec{records: 1, valueSize: 50}) }
	t.Run("segment.bytes", func(t *testing.T) {
		cfg := testConfig(newFakeClock())
		b := one(t)
		cfg.SegmentBytes = int64(3*len(b) + 1)
		var rolls []int64
		cfg.OnRoll = func(base int64) { rolls = append(rolls, base) }
		l := openLog(t, t.TempDir(), cfg)
		defer l.Close()
		for i := 0; i < 7; i++ {
			mustAppend(t, l, one(t), 0)
		}
		segs := l.Segments()
		if len(segs) != 3 || segs[1].BaseOffset != 3 || segs[2].BaseOffset != 6 || segs[0].Size != int64(3*len(b)) {
			t.Fatalf("segments %+v", segs)
		}
		if len(rolls) != 2 || rolls[0] != 3 || rolls[1] != 6 {
			t.Fatalf("OnRoll calls %v", rolls)
		}
		if !segs[2].Active || segs[1].Active {
			t.Fatal("active flag")
		}
	})
	t.Run("segment.ms", func(t *testing.T) {
		clock := newFakeClock()
		cfg := testConfig(clock)
		cfg.SegmentAge = time.Hour
		l := openLog(t, t.TempDir(), cfg)
		defer l.Close()
		mustAppend(t, l, one(t), 0)
		clock.Advance(time.Hour) // exactly segment.ms: not yet
		mustAppend(t, l, one(t), 0)
		if n := len(l.Segments()); n != 1 {
			t.Fatalf("%d segments before segment.ms passed", n)
		}
		clock.Advance(time.Millisecond)
		mustAppend(t, l, one(t), 0)
		if segs := l.Segments(); len(segs) != 2 || segs[1].BaseOffset != 2 {
			t.Fatalf("segments %+v", segs)
		}
	})
	t.Run("index full", func(t *testing.T) {
		cfg := testConfig(newFakeClock())
		cfg.IndexIntervalBytes = 0 // an entry for every batch after the first
		cfg.SegmentIndexBytes = 4 * offsetIndexEntrySize
		l := openLog(t, t.TempDir(), cfg)
		defer l.Close()
		for i := 0; i < 12; i++ {
			b := buildBatch(t, batchSpec{records: 1, firstTs: int64(i), valueSize: 5})
			mustAppend(t, l, b, 0)
		}
		segs := l.Segments()
		if len(segs) < 2 {
			t.Fatalf("no roll on a full index: %+v", segs)
		}
		// 4 offset entries of 8 bytes; the time index holds 2 of 12 bytes
		// with one slot kept for the seal, so it fills first.
		if segs[1].BaseOffset != 2 {
			t.Fatalf("rolled at %d, want 2", segs[1].BaseOffset)
		}
		for off := int64(0); off < l.LogEndOffset(); off++ {
			if res, err := l.Read(off, 1, math.MaxInt64, true); err != nil || res.FirstOffset != off {
				t.Fatalf("read %d: %+v %v", off, res, err)
			}
		}
	})
	t.Run("relative offset overflow", func(t *testing.T) {
		l := openLog(t, t.TempDir(), testConfig(newFakeClock()))
		defer l.Close()
		// A follower batch whose offsets span almost 2^31 (as after compaction).
		b := buildBatch(t, batchSpec{records: 1})
		setLastOffsetDelta(b, math.MaxInt32-5)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		c := buildBatch(t, batchSpec{records: 10})
		setBase(c, l.LogEndOffset())
		if _, err := l.AppendAsFollower(c); err != nil {
			t.Fatal(err)
		}
		if segs := l.Segments(); len(segs) != 2 || segs[1].BaseOffset != math.MaxInt32-4 {
			t.Fatalf("segments %+v", segs)
		}
	})
	t.Run("explicit", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, testConfig(newFakeClock()))
		defer l.Close()
		if err := l.Roll(); err != nil || len(l.Segments()) != 1 {
			t.Fatalf("roll of an empty segment: %v %d", err, len(l.Segments()))
		}
		mustAppend(t, l, one(t), 0)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		segs := l.Segments()
		if len(segs) != 2 || segs[1].BaseOffset != 1 {
			t.Fatalf("segments %+v", segs)
		}
		// The rolled segment's indexes are trimmed.
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			st, err := os.Stat(filepath.Join(dir, fileName(0, suf)))
			if err != nil || st.Size() > timeIndexEntrySize {
				t.Fatalf("%s not trimmed: %v %v", suf, st.Size(), err)
			}
		}
		if st, _ := os.Stat(filepath.Join(dir, fileName(1, indexSuffix))); st.Size() != 4096 {
			t.Fatalf("active index not preallocated: %d", st.Size())
		}
	})
}

// setLastOffsetDelta rewrites a batch's last offset delta (not covered by
// any check the log makes; the CRC is recomputed).
func setLastOffsetDelta(b []byte, d int32) {
	b[23], b[24], b[25], b[26] = byte(d>>24), byte(d>>16), byte(d>>8), byte(d)
	fixCRC(b)
}

func setBase(b []byte, off int64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(off >> (56 - 8*i))
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.IndexIntervalBytes = 0
	l := openLog(t, dir, cfg)
	for i := 0; i < 12; i++ {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 2, firstTs: int64(i * 10)}), int32(i/4))
		if i == 3 || i == 7 {
			l.Roll()
		}
	}
	// segments: [0,8) [8,16) [16,24); epochs 0@0 1@8 2@16
	want := readAll(t, l, 0)
	if err := l.Truncate(11); err != nil { // inside batch [10,11]: drops it whole
		t.Fatal(err)
	}
	if l.LogEndOffset() != 10 || len(l.Segments()) != 2 {
		t.Fatalf("LEO %d, %d segments", l.LogEndOffset(), len(l.Segments()))
	}
	if e := l.Epochs(); len(e) != 2 || e[1] != (EpochEntry{Epoch: 1, StartOffset: 8}) {
		t.Fatalf("epochs %v", e)
	}
	if got := readAll(t, l, 0); string(got) != string(want[:len(got)]) || len(got) != 5*len(want)/12 {
		t.Fatalf("truncated log: %d bytes", len(got))
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(16, logSuffix))); !os.IsNotExist(err) {
		t.Fatalf("later segment still on disk: %v", err)
	}
	if _, _, ok, _ := l.OffsetForTimestamp(testTs0 + 60); ok {
		t.Fatal("timestamp of a truncated batch still found")
	}
	// Appending continues at the new end, in the truncated segment.
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1, firstTs: 5}), 3)
	if l.LogEndOffset() != 11 || len(l.Segments()) != 2 {
		t.Fatalf("after append: LEO %d, %d segments", l.LogEndOffset(), len(l.Segments()))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	if l.LogEndOffset() != 11 || l.scanCount() != 0 {
		t.Fatalf("reopen: LEO %d, scans %d", l.LogEndOffset(), l.scanCount())
	}
	if e := l.Epochs(); len(e) != 3 || e[2] != (EpochEntry{Epoch: 3, StartOffset: 10}) {
		t.Fatalf("epochs after reopen %v", e)
	}
	// Below the log start: everything goes, the log restarts there.
	if err := l.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 0 || len(l.Epochs()) != 0 || len(l.Segments()) != 1 {
		t.Fatalf("full truncate: LEO %d epochs %v", l.LogEndOffset(), l.Epochs())
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 4)
	l.Close()
}

func TestDeleteSegmentsBefore(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	cfg := testConfig(clock)
	l := openLog(t, dir, cfg)
	for i := 0; i < 9; i++ {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 1, firstTs: int64(i)}), 0)
		if i%3 == 2 {
			l.Roll()
		}
	}
	// segments [0,3) [3,6) [6,9) [9, active empty)
	res, err := l.Read(1, 1000, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.DeleteSegmentsBefore(4)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != 4 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if _, err := l.Read(3, 1000, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if b, err := l.ReadBytes(4, 1, math.MaxInt64, true); err != nil || decodeBatches(t, b)[0].FirstOffset != 4 {
		t.Fatalf("read at log start: %v", err)
	}
	// The deleted segment is renamed, and the reader's file still works.
	if _, err := os.Stat(filepath.Join(dir, fileName(0, logSuffix)+deletedSuffix)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, res.Size)
	if _, err := res.File.ReadAt(buf, res.Position); err != nil || decodeBatches(t, buf)[0].FirstOffset != 1 {
		t.Fatalf("in-flight reader: %v", err)
	}
	clock.Advance(cfg.FileDeleteDelay - time.Millisecond)
	l.MaybeFlush()
	if l.PendingDeletes() != 1 {
		t.Fatal("removed before file.delete.delay")
	}
	clock.Advance(time.Millisecond)
	l.MaybeFlush()
	if l.PendingDeletes() != 0 {
		t.Fatal("not removed after file.delete.delay")
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(0, logSuffix)+deletedSuffix)); !os.IsNotExist(err) {
		t.Fatalf("deleted file remains: %v", err)
	}
	// Never the active segment; a log start beyond LEO is refused.
	if n, _ := l.DeleteSegmentsBefore(9); n != 2 || len(l.Segments()) != 1 {
		t.Fatalf("deleted %d, %d left", n, len(l.Segments()))
	}
	if _, err := l.DeleteSegmentsBefore(10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond LEO: %v", err)
	}
	l.Close() // removes the pending segments at once
	if _, err := os.Stat(filepath.Join(dir, fileName(3, logSuffix)+deletedSuffix)); !os.IsNotExist(err) {
		t.Fatalf("Close left a deleted file: %v", err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogStartOffset() != 9 || l.LogEndOffset() != 9 {
		t.Fatalf("after reopen: start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
}
