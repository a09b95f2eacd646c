package coldread

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// waitCached polls until every key is in the chunk cache.
func waitCached(t *testing.T, r *Reader, keys ...chunkKey) {
	t.Helper()
	for _, k := range keys {
		if err := proctest.Poll(10*time.Second, 2*time.Millisecond, func() bool { return r.chunks.Contains(k) }); err != nil {
			t.Fatalf("chunk %d of %s never read ahead (stats %+v): %v", k.index, k.object, r.Stats(), err)
		}
	}
}

func TestReadSharedIsReadWithoutTheCopy(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	for _, maxBytes := range []int{1, 5000, 20_000, 1 << 20} {
		var got []byte
		pieces := 0
		for off := int64(0); off < records; {
			parts, done, next, err := f.reader.ReadShared(testCtx(t), f.topic, 0, off, maxBytes, true)
			if err != nil || next <= off || len(parts) == 0 {
				t.Fatalf("maxBytes %d: read at %d: %d pieces, next %d, %v", maxBytes, off, len(parts), next, err)
			}
			copied, cnext, err := f.reader.Read(testCtx(t), f.topic, 0, off, maxBytes, true)
			if err != nil || cnext != next || !bytes.Equal(copied, bytes.Join(parts, nil)) {
				t.Fatalf("maxBytes %d: Read at %d differs from ReadShared (next %d and %d, %v)", maxBytes, off, cnext, next, err)
			}
			for _, p := range parts {
				if len(p) == 0 || len(p) > int(f.reader.cfg.ChunkBytes) {
					t.Fatalf("maxBytes %d: a piece of %d bytes (chunks hold %d)", maxBytes, len(p), f.reader.cfg.ChunkBytes)
				}
				got = append(got, p...)
			}
			pieces += len(parts)
			done()
			off = next
		}
		if !bytes.Equal(got, f.all) {
			t.Fatalf("maxBytes %d: shared replay differs from the log (%d bytes, want %d)", maxBytes, len(got), len(f.all))
		}
		// 4 KiB chunks: a read of more than a chunk comes in several pieces.
		if maxBytes > 5000 && pieces <= int(int64(len(f.all))/int64(maxBytes)) {
			t.Fatalf("maxBytes %d: %d pieces for %d bytes", maxBytes, pieces, len(f.all))
		}
	}
}

func TestReadAheadQueuesTheReadsChunksAndAWindowPastIt(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	key, _ := objectKey(f.segs[0].seg, "log")
	// A read of 3 chunks from offset 0: chunks 1 and 2 are its own, loaded
	// concurrently, then ReadAheadChunks (2) more past its end.
	b, _, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 3*4096, true)
	if err != nil || !bytes.HasPrefix(f.all, b) {
		t.Fatalf("read: %d bytes, %v", len(b), err)
	}
	waitCached(t, f.reader, chunkKey{key, 1}, chunkKey{key, 2}, chunkKey{key, 3}, chunkKey{key, 4})
	if st := f.reader.Stats(); st.ReadAheads < 4 {
		t.Fatalf("%d read-aheads counted, want at least 4", st.ReadAheads)
	}
}

func TestReadAheadCrossesIntoTheNextSegment(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	s0, s1 := f.segs[0].seg, f.segs[1].seg
	// A small read of the last batch of segment 0: the window runs on into
	// segment 1, whose .index is loaded too.
	if _, _, err := f.reader.Read(testCtx(t), f.topic, 0, s0.EndOffset, 100, true); err != nil {
		t.Fatal(err)
	}
	key1, _ := objectKey(s1, "log")
	waitCached(t, f.reader, chunkKey{key1, 0})
	idxKey, _ := objectKey(s1, "index")
	if err := proctest.Poll(10*time.Second, 2*time.Millisecond, func() bool { return f.reader.offIdx.Contains(idxKey) }); err != nil {
		t.Fatalf("segment 1's index never read ahead: %v", err)
	}
	// The next sequential read is served without a GET of its own.
	gets := f.reader.Stats().GetRequests
	if _, _, err := f.reader.Read(testCtx(t), f.topic, 0, s1.BaseOffset, 100, true); err != nil {
		t.Fatal(err)
	}
	if st := f.reader.Stats(); st.GetRequests > gets+int64(f.reader.cfg.ReadAheadChunks)+1 {
		t.Fatalf("the read issued %d GETs beyond its read-ahead", st.GetRequests-gets)
	}
}

func TestReadAheadIsBoundedByHalfTheCache(t *testing.T) {
	cfg := smallConfig() // 64 KiB cache: at most 32 KiB (8 chunks) ahead
	cfg.QueueLength = 1000
	f := tieredFixture(t, records, cfg, nil)
	segs := f.reader.segments(f.topic, 0)
	f.reader.prefetch(segs, f.segs[0].seg, 0, 1<<30)
	// Segments end mid-chunk: the chunk that holds the 32 KiB limit counts.
	if got, want := f.reader.Stats().ReadAheads, cfg.CacheBytes/2/cfg.ChunkBytes; got < want || got > want+1 {
		t.Fatalf("%d chunks read ahead with a %d-byte cache of %d-byte chunks, want %d or %d", got, cfg.CacheBytes, cfg.ChunkBytes, want, want+1)
	}
}

// A read-ahead task that runs only after a reader has loaded its chunk
// itself (and the reader's copy has since left the cache while still held)
// must not GET the chunk again: the reader is past it, so the second copy is
// a wasted GET that evicts useful chunks and is later recycled although no
// reader ever held it (the flake of TestHeldPiecesSurviveEvictionAndRecycling
// under load, issue 13).
func TestReadAheadQueuedBehindAReaderDoesNotLoadAgain(t *testing.T) {
	cfg := smallConfig()
	cfg.Workers = 1
	f := tieredFixture(t, records, cfg, nil)
	r := f.reader
	key, _ := objectKey(f.segs[0].seg, "log")
	o := object{r: r, key: key, size: f.segs[0].seg.Size}

	// Hold the only worker so that the read-ahead task waits in the queue.
	started, unblock := make(chan struct{}), make(chan struct{})
	if err := r.pool.submit(testCtx(t), func(context.Context) { close(started); <-unblock }); err != nil {
		t.Fatal(err)
	}
	<-started
	if !r.prefetchChunk(o, 1) {
		t.Fatal("read-ahead not queued")
	}
	// The reader gets to chunk 1 first and loads it itself; then its copy
	// leaves the cache while the reader still holds it.
	gets := r.Stats().GetRequests
	c, err := o.chunk(testCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.release()
	r.chunks.clear()
	// Let the read-ahead run, and wait until it has (one worker: FIFO).
	close(unblock)
	ran := make(chan struct{})
	if err := r.pool.submit(testCtx(t), func(context.Context) { close(ran) }); err != nil {
		t.Fatal(err)
	}
	<-ran
	if n := r.Stats().GetRequests - gets; n != 1 || r.chunks.Contains(chunkKey{key, 1}) {
		t.Fatalf("%d GETs of chunk 1 (cached again: %v), want only the reader's", n, r.chunks.Contains(chunkKey{key, 1}))
	}
	if got := f.all[4096:8192]; !bytes.Equal(c.b, got) {
		t.Fatal("the held chunk changed")
	}
}
