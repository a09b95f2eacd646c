package segment

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shale-io/shale/segment/vfs"
)

// TestTornIndexRecovery damages the indexes of the golden log the ways a
// crash or a preallocated file leaves them, reopens it, and checks that
// every lookup gives the golden answer (testdata/index_lookups.txt) and
// that a clean close leaves the golden files again: a torn index may cost a
// rescan, never a wrong answer.
func TestTornIndexRecovery(t *testing.T) {
	active, rolled := fileName(12, indexSuffix), fileName(0, indexSuffix)
	activeT, rolledT := fileName(12, timeIndexSuffix), fileName(0, timeIndexSuffix)
	unclean := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		harm func(t *testing.T, dir string)
		// fewer: the case may keep fewer index entries than the golden
		// log (a trusted index that lost its last entry is still right).
		fewer bool
	}{
		{"zero tail, unclean (a killed process's preallocated active indexes)", func(t *testing.T, dir string) {
			unclean(t, dir)
			extend(t, dir, active, 1<<20)
			extend(t, dir, activeT, 1<<20)
		}, false},
		{"zero tail, clean marker", func(t *testing.T, dir string) {
			extend(t, dir, active, 4096)
			extend(t, dir, activeT, 4096)
		}, false},
		{"stale entries past the end, unclean", func(t *testing.T, dir string) {
			unclean(t, dir)
			// Entries a longer history left: larger offsets and positions
			// that a reader must never see.
			stale := bytes.Repeat([]byte{0, 0, 0, 9, 0, 0, 1, 0}, 100)
			appendTo(t, dir, active, stale)
			appendTo(t, dir, activeT, bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 9}, 100))
		}, false},
		{"torn last entry, clean marker", func(t *testing.T, dir string) {
			cut(t, dir, active, 3)
			cut(t, dir, activeT, 5)
		}, true},
		{"zeroed entries, clean marker", func(t *testing.T, dir string) {
			zero(t, dir, active)
			zero(t, dir, rolledT)
		}, false},
		{"rolled segment's trim lost, recovery point below it", func(t *testing.T, dir string) {
			unclean(t, dir)
			if err := os.Remove(filepath.Join(dir, recoveryPointFile)); err != nil {
				t.Fatal(err)
			}
			extend(t, dir, rolled, 1<<20)
			extend(t, dir, rolledT, 1<<20)
			extend(t, dir, active, 1<<20)
		}, false},
		{"garbage index, unclean", func(t *testing.T, dir string) {
			unclean(t, dir)
			garbage := bytes.Repeat([]byte{0x7f, 3, 0, 1, 0, 0, 0, 40}, 64)
			if err := os.WriteFile(filepath.Join(dir, active), garbage, 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	want, err := os.ReadFile(filepath.Join("testdata", "index_lookups.txt"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "golden")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGoldenLog(t, dir)
			c.harm(t, dir)
			cfg := testConfig(newFakeClock())
			cfg.IndexIntervalBytes = 100 // as writeGoldenLog: a rebuild gives its entries
			l := openLog(t, dir, cfg)
			got := indexLookups(t, l)
			if c.fewer {
				got, want := answers(got), answers(string(want))
				if got != want {
					t.Fatalf("lookups differ:\n%s\nwant\n%s", got, want)
				}
				l.Close()
				return
			}
			if got != string(want) {
				t.Fatalf("lookups differ:\n%s\nwant\n%s", got, want)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{rolled, rolledT, active, activeT} {
				got, _ := os.ReadFile(filepath.Join(dir, n))
				w, _ := os.ReadFile(filepath.Join(golden, n))
				if !bytes.Equal(got, w) {
					t.Errorf("%s after a clean close:\n got  %x\n want %x", n, got, w)
				}
			}
		})
	}
}

// TestUncleanRecoveryReadsWhatTheLogHolds crashes a log whose active
// segment's indexes are preallocated to 4 MiB each and checks from the
// recovery counter that reopening read about what the log holds, not the
// preallocated indexes (issue 23: every page of them was touched).
func TestUncleanRecoveryReadsWhatTheLogHolds(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.SegmentIndexBytes = 4 << 20
	cfg.IndexIntervalBytes = 1000
	l := openLog(t, dir, cfg)
	writeLog(t, l, 40)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	writeLog(t, l, 40)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	size, leo := l.Size(), l.LogEndOffset()
	l.closeForCrashTest()
	if st, err := os.Stat(filepath.Join(dir, fileName(120, indexSuffix))); err != nil || st.Size() != 4<<20 {
		t.Fatalf("the active index is not preallocated: %v %v", st, err)
	}

	before := Recovery()
	l = openLog(t, dir, cfg)
	defer l.Close()
	after := Recovery()
	if l.LogEndOffset() != leo || l.Size() != size {
		t.Fatalf("recovered LEO %d size %d, want %d %d", l.LogEndOffset(), l.Size(), leo, size)
	}
	read := after.Bytes - before.Bytes
	// The active segment is re-read whole; the rolled one, below the
	// recovery point, costs its index entries and a few headers.
	if active := size / 2; read < active || read > size+8<<10 {
		t.Fatalf("recovery read %d bytes; the log holds %d (active segment %d), its indexes are preallocated to %d",
			read, size, active, cfg.SegmentIndexBytes)
	}
	if after.Segments-before.Segments != 1 {
		t.Fatalf("%d segments re-read, want the active one", after.Segments-before.Segments)
	}
	decodeBatches(t, readAll(t, l, 0))
}

// answers keeps, of indexLookups' lines, the offset, its segment and its
// batch position: what a reader gets, whichever index entry led there.
func answers(lookups string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(lookups), "\n") {
		off, rest, _ := strings.Cut(line, " -> ")
		seg, rest, _ := strings.Cut(rest, ", ")
		_, pos, _ := strings.Cut(rest, "), ")
		out = append(out, off+" "+seg+" "+pos)
	}
	return strings.Join(out, "\n")
}

func extend(t *testing.T, dir, name string, size int64) {
	t.Helper()
	if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, dir, name string, n int64) {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil || st.Size() < n {
		t.Fatalf("%s: %v %v", name, st, err)
	}
	extend(t, dir, name, st.Size()-n)
}

func zero(t *testing.T, dir, name string) {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil || st.Size() == 0 {
		t.Fatalf("%s: %v %v", name, st, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), make([]byte, st.Size()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestStaleIndexTailNeverRead: after an unclean stop the active segment's
// index keeps, past the entries recovery rebuilt, bytes it never clears
// (here: plausible entries of a longer history). Appends, a roll, a second
// crash and a clean close must never let a reader see them: every lookup
// matches a log whose indexes were rebuilt from scratch, and the roll
// trims the file to its entries.
func TestStaleIndexTailNeverRead(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.SegmentIndexBytes = 64 << 10
	cfg.IndexIntervalBytes = 500
	l := openLog(t, dir, cfg)
	writeLog(t, l, 20)
	l.closeForCrashTest()
	// Stale entries right after the real ones: growing offsets and
	// positions, as a longer log truncated by recovery would leave.
	idxPath := filepath.Join(dir, fileName(0, indexSuffix))
	f, err := os.OpenFile(idxPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for ; ; n++ { // the first zero entry ends the real ones
		var e [offsetIndexEntrySize]byte
		if _, err := f.ReadAt(e[:], n*offsetIndexEntrySize); err != nil || e == [offsetIndexEntrySize]byte{} {
			break
		}
	}
	for i := int64(0); i < 50; i++ {
		var e [offsetIndexEntrySize]byte
		binary.BigEndian.PutUint32(e[:], uint32(1000+i*7))
		binary.BigEndian.PutUint32(e[4:], uint32(100000+i*900))
		if _, err := f.WriteAt(e[:], (n+i)*offsetIndexEntrySize); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	l = openLog(t, dir, cfg)
	writeLog(t, l, 5) // fewer entries than the stale ones: they stay past n
	check := func(when string) {
		t.Helper()
		if got, want := indexLookups(t, l), rebuiltLookups(t, dir, cfg); got != want {
			t.Fatalf("%s: lookups differ from a rebuilt log:\n%s\nwant\n%s", when, got, want)
		}
	}
	check("after recovery and appends")
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	entries := l.mu.segments[0].idx.n
	l.mu.RUnlock()
	if st, err := os.Stat(idxPath); err != nil || st.Size() != int64(entries*offsetIndexEntrySize) {
		t.Fatalf("rolled index %v (%v), want %d entries", st, err, entries)
	}
	writeLog(t, l, 5)
	check("after a roll")
	l.closeForCrashTest()
	l = openLog(t, dir, cfg)
	check("after a second crash")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	check("after a clean close")
}

// rebuiltLookups copies the log in dir without its index files or clean
// marker, opens the copy (which rebuilds every index from the log) and
// returns its lookups.
func rebuiltLookups(t *testing.T, dir string, cfg Config) string {
	t.Helper()
	cp := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, logSuffix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := openLog(t, cp, cfg)
	defer l.Close()
	return indexLookups(t, l)
}

// countingSyncs returns the operating system's filesystem, noting the base
// name of each file or directory it fsyncs, and a function that returns
// the names noted so far.
func countingSyncs() (vfs.FS, func() []string) {
	var (
		mu     sync.Mutex
		synced []string
	)
	fsys := vfs.WithErrors(vfs.Default, func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			mu.Lock()
			defer mu.Unlock()
			synced = append(synced, filepath.Base(op.Path))
		}
		return nil
	})
	return fsys, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(synced)
	}
}

// TestCleanOpenFsyncsOnlyTheDirectory counts the fsyncs of opening a
// cleanly closed log: only the directory's (the removed clean-shutdown
// marker). Growing the active segment's indexes back to
// segment.index.bytes needs none, as at a roll: a crash re-reads the
// active segment whatever size its indexes had. It cost two fsyncs per
// partition at every start.
func TestCleanOpenFsyncsOnlyTheDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	writeLog(t, l, 20)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	writeLog(t, l, 20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	counted, syncs := countingSyncs()
	cfg.FS = counted
	l = openLog(t, dir, cfg)
	defer l.Close()
	if s, want := strings.Join(syncs(), " "), filepath.Base(dir); s != want {
		t.Errorf("clean open fsynced %q, want %q", s, want)
	}
}

// TestUncleanOpenFsyncsWhatItRecovered: after an unclean stop, opening a
// log with two rolled segments below the recovery point fsyncs the
// recovered active segment's files, the recovery point and the directory;
// the rolled segments were fsynced before the recovery point passed them
// (each of their files was fsynced again, before).
func TestUncleanOpenFsyncsWhatItRecovered(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	for range 2 {
		writeLog(t, l, 20)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	writeLog(t, l, 20)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	leo, size := l.LogEndOffset(), l.Size()
	l.closeForCrashTest()
	counted, syncs := countingSyncs()
	cfg.FS = counted
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != leo || l.Size() != size || l.scanCount() != 1 {
		t.Fatalf("reopened LEO %d size %d after %d scans, want %d %d after 1", l.LogEndOffset(), l.Size(), l.scanCount(), leo, size)
	}
	active := fileName(120, "")
	want := strings.Join([]string{active + logSuffix, active + indexSuffix, active + timeIndexSuffix,
		recoveryPointFile + tmpSuffix, filepath.Base(dir)}, " ")
	if s := strings.Join(syncs(), " "); s != want {
		t.Errorf("unclean open fsynced %q, want %q", s, want)
	}
}
