package coldread

import (
	"io"
	"testing"
)

// The pair for `make bench`: a cold replay of a partition's remote segments
// through a fresh Reader (remote indexes, aligned chunks, read-ahead, 1 MiB
// fetches; with and without the copy out of the chunks) beside plain
// sequential ranged GETs of the same .log objects, chunk-sized, through the
// same Bucket, in the same run. Their ratio is the cold read path's
// overhead over the bucket itself.

const (
	benchRecords      = 60_000
	benchSegmentBytes = 2 << 20
	benchFetchBytes   = 1 << 20
)

func benchFixture(b *testing.B) *tiered {
	b.Helper()
	f := tieredFixtureSized(b, benchRecords, benchSegmentBytes, Defaults(), nil)
	b.SetBytes(int64(len(f.all)))
	return f
}

// BenchmarkColdReplay replays through Read, which copies the batches into
// one slice for the caller.
func BenchmarkColdReplay(b *testing.B) { benchReplay(b, false) }

// BenchmarkColdReplayShared replays through ReadShared, as the fetch path
// does: the batches stay in the cached chunks they were fetched into.
func BenchmarkColdReplayShared(b *testing.B) { benchReplay(b, true) }

func benchReplay(b *testing.B, shared bool) {
	f := benchFixture(b)
	rl, topics := f.reader.segs, f.reader.topics
	b.ResetTimer()
	for b.Loop() {
		r, err := New(Defaults(), f.bucket, rl, topics, quietLogger())
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for off := int64(0); off < benchRecords; {
			var next int64
			if shared {
				var parts [][]byte
				var done func()
				parts, done, next, err = r.ReadShared(testCtx(b), f.topic, 0, off, benchFetchBytes, true)
				for _, p := range parts {
					n += len(p)
				}
				done()
			} else {
				var batches []byte
				batches, next, err = r.Read(testCtx(b), f.topic, 0, off, benchFetchBytes, true)
				n += len(batches)
			}
			if err != nil || next <= off {
				b.Fatalf("read at %d: next %d, %v", off, next, err)
			}
			off = next
		}
		r.Close()
		if n != len(f.all) {
			b.Fatalf("replayed %d bytes, want %d", n, len(f.all))
		}
	}
}

func BenchmarkPlainRangedGet(b *testing.B) {
	f := benchFixture(b)
	chunk := Defaults().ChunkBytes
	buf := make([]byte, chunk)
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for _, s := range f.segs {
			key, _ := objectKey(s.seg, "log")
			for off := int64(0); off < s.seg.Size; off += chunk {
				rc, err := f.bucket.GetRange(testCtx(b), key, off, min(chunk, s.seg.Size-off))
				if err != nil {
					b.Fatal(err)
				}
				m, err := io.ReadFull(rc, buf[:min(chunk, s.seg.Size-off)])
				rc.Close()
				if err != nil {
					b.Fatal(err)
				}
				n += m
			}
		}
		if n != len(f.all) {
			b.Fatalf("read %d bytes, want %d", n, len(f.all))
		}
	}
}
