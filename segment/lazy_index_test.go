package segment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// indexFilesIn lists the .index and .timeindex files in dir with their
// sizes.
func indexFilesIn(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); ext == indexSuffix || ext == timeIndexSuffix {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = info.Size()
		}
	}
	return out
}

// A new log, and one reopened before its first batch, has no index files:
// its active segment makes them at its first batch, at segment.index.bytes,
// and they work from there as eagerly made ones do (lookups by offset and
// time, trimming at close, trust at a clean reopen).
func TestEmptyActiveSegmentMakesItsIndexesAtItsFirstBatch(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.IndexIntervalBytes = 1 // an entry after every batch
	l := openLog(t, dir, cfg)
	if got := indexFilesIn(t, dir); len(got) != 0 {
		t.Fatalf("a new log has index files %v; want none before its first batch", got)
	}
	if err := l.Flush(); err != nil { // a sync of an absent index is no error
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	if got := indexFilesIn(t, dir); len(got) != 0 {
		t.Fatalf("an empty log reopened has index files %v; want none", got)
	}

	var want []byte
	for i := range 20 {
		b := buildBatch(t, batchSpec{records: 3, firstTs: int64(i) * 1000, valueSize: 50})
		mustAppend(t, l, b, 0)
		want = append(want, b...) // as stamped
		if i == 0 {
			got := indexFilesIn(t, dir)
			idx, tidx := fileName(0, indexSuffix), fileName(0, timeIndexSuffix)
			if got[idx] != int64(cfg.SegmentIndexBytes) || got[tidx] != int64(cfg.SegmentIndexBytes-cfg.SegmentIndexBytes%timeIndexEntrySize) {
				t.Fatalf("after the first batch: index files %v; want %s and %s at segment.index.bytes %d", got, idx, tidx, cfg.SegmentIndexBytes)
			}
		}
	}
	check := func(l *Log) {
		t.Helper()
		if got := readAll(t, l, 0); !slices.Equal(got, want) {
			t.Fatalf("read back %d bytes, want the %d appended", len(got), len(want))
		}
		// Offset 31 is in the eleventh batch (offsets 30-32): the read
		// starts at that batch, found through the index.
		res, err := l.Read(31, 1<<20, 1<<62, true)
		if err != nil || res.Size == 0 {
			t.Fatalf("read at 31: %+v, %v", res, err)
		}
		if off, _, ok, err := l.OffsetForTimestamp(testTs0 + 12_000); err != nil || !ok || off != 36 {
			t.Fatalf("offset for the 13th batch's timestamp: %d %v %v; want 36", off, ok, err)
		}
	}
	check(l)
	l.mu.RLock()
	entries := l.mu.segments[0].idx.n
	l.mu.RUnlock()
	if entries < 10 {
		t.Fatalf("%d offset index entries for 20 batches at index.interval.bytes 1", entries)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := indexFilesIn(t, dir)[fileName(0, indexSuffix)]; got != int64(entries*offsetIndexEntrySize) {
		t.Fatalf("offset index of %d bytes after close; want it trimmed to its %d entries", got, entries)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	check(l)
}

// A crash before an empty log's first batch leaves a log that opens and
// takes appends; a crash after a flushed first batch keeps it (the
// indexes, made without a directory fsync, are rebuilt when lost).
func TestLazyIndexesAcrossACrash(t *testing.T) {
	fs := newCrashFS(t)
	cfg := crashConfig(fs)
	l, err := Open(crashDir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	img := fs.CrashClone()
	l.closeForCrashTest()

	cfg = crashConfig(img)
	l, err = Open(crashDir, cfg)
	if err != nil {
		t.Fatalf("open after a crash of a new log: %v", err)
	}
	b := buildBatch(t, batchSpec{records: 2, valueSize: 10})
	mustAppend(t, l, b, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	img2 := img.CrashClone()
	l.closeForCrashTest()

	l, err = Open(crashDir, crashConfig(img2))
	if err != nil {
		t.Fatalf("open after a crash past the first batch: %v", err)
	}
	defer l.Close()
	if got := readAll(t, l, 0); !slices.Equal(got, b) {
		t.Fatalf("after the crash: %d bytes, want the flushed batch's %d", len(got), len(b))
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1, valueSize: 10}), 0)
	if l.LogEndOffset() != 3 {
		t.Fatalf("LEO %d after appending past the recovered batch; want 3", l.LogEndOffset())
	}
}
