package segment

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// benchBatch is a 16 KiB batch of 1 KiB records.
func benchBatch(b *testing.B) []byte {
	return buildBatch(b, batchSpec{records: 16, valueSize: 1000})
}

// BenchmarkAppend appends 16 KiB batches of 1 KiB records (no fsync: the
// default flush policy). Its peer is BenchmarkPlainWrite.
func BenchmarkAppend(b *testing.B) {
	cfg := testConfig(newFakeClock())
	cfg.SegmentIndexBytes = 10 << 20
	cfg.SegmentBytes = 256 << 20
	l := openLog(b, b.TempDir(), cfg)
	defer l.Close()
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer() // the deferred Close (flush, trim) is not part of the append path
}

// BenchmarkPlainWrite writes the same bytes sequentially to a plain file,
// rolling to a new file at the same size as BenchmarkAppend and fsyncing
// each file it rolls away from on a background goroutine, as the log's
// flusher does, and starting writeback of every Defaults().WritebackBytes
// written on another, as the flusher does too: the same I/O and
// durability, so the ratio measures what the log adds (header checks,
// offsets, indexes, locking).
func BenchmarkPlainWrite(b *testing.B) {
	dir := b.TempDir()
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	newFile := func(i int) *os.File {
		f, err := os.Create(filepath.Join(dir, fileName(int64(i), logSuffix)))
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	rolled := make(chan *os.File, 16)
	synced := make(chan error, 1)
	go func() {
		var first error
		for f := range rolled {
			if err := f.Sync(); err != nil && first == nil {
				first = err
			}
			f.Close()
		}
		synced <- first
	}()
	type wbRange struct {
		f        *os.File
		from, to int64
	}
	wbEvery := Defaults().WritebackBytes
	writeback := make(chan wbRange, 1024)
	wbDone := make(chan struct{})
	go func() {
		defer close(wbDone)
		for r := range writeback {
			// A file the roll goroutine closed meanwhile fails; harmless.
			startWriteback(r.f, r.from, r.to-r.from)
		}
	}()
	f := newFile(0)
	var size, wbFrom int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if size+int64(len(batch)) > 256<<20 {
			rolled <- f
			f, size, wbFrom = newFile(i), 0, 0
		}
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
		size += int64(len(batch))
		if to := size &^ (pageSize - 1); to-wbFrom >= wbEvery {
			writeback <- wbRange{f, wbFrom, to}
			wbFrom = to
		}
	}
	b.StopTimer()
	close(writeback)
	<-wbDone
	close(rolled)
	if err := <-synced; err != nil {
		b.Fatal(err)
	}
	f.Close()
}

// benchLog writes a log of n small batches in one segment, the offset index
// filled to about 100k entries.
func benchLog(b *testing.B, n int) *Log {
	cfg := testConfig(newFakeClock())
	cfg.SegmentIndexBytes = 10 << 20
	cfg.IndexIntervalBytes = 0
	l := openLog(b, b.TempDir(), cfg)
	batch := buildBatch(b, batchSpec{records: 4, valueSize: 10})
	for i := 0; i < n; i++ {
		mustAppend(b, l, batch, 0)
	}
	return l
}

// BenchmarkOffsetLookup is one binary search of a 100k-entry offset index.
func BenchmarkOffsetLookup(b *testing.B) {
	l := benchLog(b, 100_000)
	defer l.Close()
	s := l.active()
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	var sink int64
	for i := 0; i < b.N; i++ {
		_, pos := s.idx.lookup(rng.Int63n(leo))
		sink += pos
	}
	_ = sink
}

// BenchmarkReadRandom is a Read (index lookup, header scan) at a random offset.
func BenchmarkReadRandom(b *testing.B) {
	l := benchLog(b, 100_000)
	defer l.Close()
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Read(rng.Int63n(leo), 1<<20, math.MaxInt64, true); err != nil {
			b.Fatal(err)
		}
	}
}
