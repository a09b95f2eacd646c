package segment

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeLog appends n batches of 3 records (about 400 bytes each).
func writeLog(t *testing.T, l *Log, n int) {
	for i := 0; i < n; i++ {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 3, firstTs: int64(i), valueSize: 100}), int32(i/10))
	}
}

// TestCleanReopenDoesNotRescan corrupts a byte inside a batch of a cleanly
// closed log: a clean reopen does not notice (it reads no data), while an
// unclean reopen (marker gone) truncates at that batch.
func TestCleanReopenDoesNotRescan(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	writeLog(t, l, 30)
	batchSize := l.Size() / 30
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fileName(0, logSuffix))
	flipByte(t, path, 10*batchSize+100) // inside batch 10's records

	l = openLog(t, dir, cfg)
	if l.scanCount() != 0 || l.LogEndOffset() != 90 {
		t.Fatalf("clean reopen: %d scans, LEO %d", l.scanCount(), l.LogEndOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, cleanShutdownFile))
	os.Remove(filepath.Join(dir, recoveryPointFile))
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.scanCount() != 1 || l.LogEndOffset() != 30 || l.Size() != 10*batchSize {
		t.Fatalf("unclean reopen: %d scans, LEO %d, size %d", l.scanCount(), l.LogEndOffset(), l.Size())
	}
	if e := l.Epochs(); len(e) != 1 || e[0] != (EpochEntry{Epoch: 0, StartOffset: 0}) {
		t.Fatalf("epochs not truncated with the log: %v", e)
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 5)
	decodeBatches(t, readAll(t, l, 0))
}

// TestRecoveryTruncatesAtCorruption flips bytes at many places in the active
// segment of a crashed (not closed) log and checks that recovery keeps
// exactly the batches before the damaged one.
func TestRecoveryTruncatesAtCorruption(t *testing.T) {
	base := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.IndexIntervalBytes = 500
	src := filepath.Join(base, "src")
	l := openLog(t, src, cfg)
	writeLog(t, l, 20)
	l.Roll()
	writeLog(t, l, 20)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	active := segs[len(segs)-1]
	batchSize := active.Size / 20
	// Leave src as a crashed process would: no Close, no marker.
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 25; i++ {
		pos := rng.Int63n(active.Size)
		dir := filepath.Join(base, strconv.Itoa(i))
		copyDir(t, src, dir)
		os.WriteFile(filepath.Join(dir, recoveryPointFile), []byte("20\n"), 0o644) // recover the active segment
		flipByte(t, filepath.Join(dir, fileName(active.BaseOffset, logSuffix)), pos)
		r := openLog(t, dir, cfg)
		keep := pos / batchSize
		if r.LogEndOffset() != 60+3*keep || r.Size() != segs[0].Size+keep*batchSize {
			t.Fatalf("flip at %d (batch %d): LEO %d, size %d", pos, keep, r.LogEndOffset(), r.Size())
		}
		decodeBatches(t, readAll(t, r, 0))
		for off := int64(0); off < r.LogEndOffset(); off++ {
			if res, err := r.Read(off, 1, math.MaxInt64, true); err != nil || res.Size == 0 {
				t.Fatalf("read %d after recovery: %v", off, err)
			}
		}
		mustAppend(t, r, buildBatch(t, batchSpec{records: 2}), 9)
		r.Close()
	}
	l.Close()
}

// TestRebuildMissingIndexes deletes index files of a closed log; Open
// rebuilds them byte for byte.
func TestRebuildMissingIndexes(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	cfg.IndexIntervalBytes = 300
	l := openLog(t, dir, cfg)
	writeLog(t, l, 15)
	l.Roll()
	writeLog(t, l, 5)
	l.Close()
	want := map[string][]byte{}
	for _, n := range []string{fileName(0, indexSuffix), fileName(0, timeIndexSuffix), fileName(45, indexSuffix)} {
		want[n], _ = os.ReadFile(filepath.Join(dir, n))
		os.Remove(filepath.Join(dir, n))
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000000.log.deleted"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "00000000000000000099.index"), []byte("x"), 0o644)
	l = openLog(t, dir, cfg)
	l.Close()
	for n, w := range want {
		if got, _ := os.ReadFile(filepath.Join(dir, n)); string(got) != string(w) || len(w) == 0 {
			t.Errorf("%s rebuilt as %x, want %x", n, got, w)
		}
	}
	for _, n := range []string{"00000000000000000000.log.deleted", "00000000000000000099.index"} {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("stray %s not removed", n)
		}
	}
}

func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	os.MkdirAll(dst, 0o755)
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
	}
}

const crashEnv = "SHALE_SEGMENT_CRASH_CHILD"

// TestCrashChild is the child of TestCrashRecovery: it appends and flushes
// batches, printing each flushed LEO, until it is killed (or, bounded, after
// 20000 batches or a minute).
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("only runs as TestCrashRecovery's child process")
	}
	cfg := testConfig(newFakeClock())
	cfg.SegmentBytes = 64 << 10
	cfg.Now = time.Now
	l, err := Open(dir, cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	stop := time.Now().Add(time.Minute)
	for i := 0; i < 20000 && time.Now().Before(stop); i++ {
		b := buildBatch(t, batchSpec{records: 1 + i%4, firstTs: int64(i), valueSize: 64 + i%300})
		if _, err := l.Append(b, int32(i/50)); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if i%3 == 0 {
			if err := l.Flush(); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("flushed", l.LogEndOffset())
		}
	}
}

// TestCrashRecovery kills a child process that appends and flushes at random
// points with SIGKILL, reopens the log and checks that everything reported
// flushed is intact and the log ends at a whole, valid batch.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var prevLEO int64
	for iter := 0; iter < 20; iter++ {
		cmd, lines := startChild(t, "TestCrashChild", crashEnv, dir)
		want := 1 + rng.Intn(12) // flushes to wait for before the kill
		var flushed int64 = -1
		deadline := time.After(30 * time.Second)
	wait:
		for n := 0; n < want; {
			select {
			case line, ok := <-lines:
				if !ok {
					break wait
				}
				if v, found := strings.CutPrefix(line, "flushed "); found {
					flushed, _ = strconv.ParseInt(v, 10, 64)
					n++
				} else if strings.HasPrefix(line, "error") {
					t.Fatalf("child: %s", line)
				}
			case <-deadline:
				break wait
			}
		}
		killChild(cmd, lines)
		if flushed < 0 {
			t.Fatalf("iteration %d: child reported no flush", iter)
		}
		l := openLog(t, dir, cfg)
		leo := l.LogEndOffset()
		if leo < flushed || leo < prevLEO {
			t.Fatalf("iteration %d: LEO %d after flushing %d (previous run ended at %d)", iter, leo, flushed, prevLEO)
		}
		rbs := decodeBatches(t, readAll(t, l, 0)) // CRC of every batch
		next := int64(0)
		for _, rb := range rbs {
			if rb.FirstOffset != next {
				t.Fatalf("iteration %d: batch at %d, want %d", iter, rb.FirstOffset, next)
			}
			next += int64(rb.LastOffsetDelta) + 1
		}
		if next != leo {
			t.Fatalf("iteration %d: batches end at %d, LEO %d", iter, next, leo)
		}
		prevLEO = leo
		// Half the time reopen cleanly in the next child, half not.
		if iter%2 == 0 {
			l.Close()
		} else {
			l.Flush()
			l.closeForCrashTest()
		}
	}
	t.Logf("final LEO %d", prevLEO)
}
