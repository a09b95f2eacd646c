package segment

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-io/shale/segment/vfs"
)

// FuzzOpenLog writes arbitrary bytes as a segment's .log, .index and
// .timeindex (and, with flag 8, the .index bytes again as its .txnindex)
// and as the leader-epoch checkpoint and recovery files, opens the
// directory (cleanly or not), and checks that Open never panics and that
// the opened log reads and appends.
func FuzzOpenLog(f *testing.F) {
	g := filepath.Join("testdata", "golden")
	read := func(n string) []byte { b, _ := os.ReadFile(filepath.Join(g, n)); return b }
	f.Add(read(fileName(0, logSuffix)), read(fileName(0, indexSuffix)), read(fileName(0, timeIndexSuffix)),
		read(epochCheckpointFile), uint8(1), int64(0))
	f.Add(read(fileName(0, logSuffix)), read(fileName(0, indexSuffix)), read(fileName(0, timeIndexSuffix)),
		read(epochCheckpointFile), uint8(0), int64(7))
	f.Add(read(fileName(12, logSuffix)), []byte{0, 0, 0, 1, 0, 0, 0, 0}, []byte{}, []byte("0\n1\n0 0\n"), uint8(3), int64(-1))
	f.Add(read(fileName(0, logSuffix)), AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}.AppendTo(nil),
		read(fileName(0, timeIndexSuffix)), read(epochCheckpointFile), uint8(8), int64(0))
	saved := fsync
	fsync = func(vfs.File) error { return nil }
	f.Cleanup(func() { fsync = saved })
	f.Fuzz(func(t *testing.T, logB, idxB, tidxB, cpB []byte, flags uint8, n int64) {
		dir := fuzzDir(t)
		base := int64(0)
		if flags&4 != 0 && len(logB) >= 8 {
			base = int64(binary.BigEndian.Uint64(logB) & 0xffff) // a log not starting at 0
		}
		write := func(name string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(fileName(base, logSuffix), logB)
		write(fileName(base, indexSuffix), idxB)
		write(fileName(base, timeIndexSuffix), tidxB)
		write(epochCheckpointFile, cpB)
		if flags&8 != 0 {
			write(fileName(base, txnIndexSuffix), idxB)
		}
		if flags&1 != 0 {
			write(cleanShutdownFile, nil)
		}
		if flags&2 != 0 {
			write(recoveryPointFile, []byte(string(rune('0'+n%10))+"\n"))
			write(logStartOffsetFile, []byte(string(rune('0'+(n/10)%10))+"\n"))
		}
		cfg := testConfig(newFakeClock())
		cfg.IndexIntervalBytes = 64
		l, err := Open(dir, cfg)
		if err != nil {
			return // an I/O-level refusal is fine; a panic is not
		}
		defer l.Close()
		start, end := l.LogStartOffset(), l.LogEndOffset()
		if start > end {
			t.Fatalf("log start %d above end %d", start, end)
		}
		for off := start; off < end && off < start+50; off++ {
			l.Read(off, 1<<20, math.MaxInt64, true)
		}
		l.OffsetForTimestamp(n)
		l.MaxTimestampOffset()
		l.EndOffsetForEpoch(int32(n))
		for _, a := range l.AbortedTxns(start, end+1) {
			if a.FirstOffset > a.LastOffset {
				t.Fatalf("aborted transaction %+v", a)
			}
		}
		info, err := l.Append(buildBatch(t, batchSpec{records: 2}), l.LatestEpoch()+1)
		if err != nil {
			t.Fatalf("append after open: %v", err)
		}
		if info.FirstOffset != end {
			t.Fatalf("append at %d, LEO was %d", info.FirstOffset, end)
		}
		b, err := l.ReadBytes(end, 1<<20, math.MaxInt64, true)
		if err != nil || len(decodeBatches(t, b)) != 1 {
			t.Fatalf("read of the appended batch: %v", err)
		}
		if err := l.Truncate(end); err != nil || l.LogEndOffset() != end {
			t.Fatalf("truncate back to %d: LEO %d, %v, segments %+v", end, l.LogEndOffset(), err, l.Segments())
		}
	})
}

// fuzzDir is a temp dir on tmpfs when /dev/shm exists: fuzzing exercises
// parsing, and on the shared disk unlinking mmap'd files under writeback
// stalls workers for tens of seconds.
func fuzzDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "shale-fuzz-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}
