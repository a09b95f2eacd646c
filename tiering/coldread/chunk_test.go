package coldread

import (
	"bytes"
	"sync/atomic"
	"testing"
)

func TestChunkIsRecycledWhenTheLastReferenceGoes(t *testing.T) {
	var recycled atomic.Int64
	c := newChunk(chunkBufs.get(8), true, &recycled)
	if !c.acquire() {
		t.Fatal("acquire of a cached chunk failed")
	}
	c.release() // the reader's
	if recycled.Load() != 0 || c.b == nil {
		t.Fatal("recycled while the cache still held it")
	}
	c.release() // the cache's
	if recycled.Load() != 1 || c.b != nil {
		t.Fatalf("not recycled after the last release (%d)", recycled.Load())
	}
	if c.acquire() {
		t.Fatal("acquired a recycled chunk")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a release past zero did not panic")
		}
	}()
	c.release()
}

func TestShortChunkIsNotPooled(t *testing.T) {
	var recycled atomic.Int64
	c := newChunk(make([]byte, 3), false, &recycled)
	c.release()
	if recycled.Load() != 0 || c.b != nil {
		t.Fatalf("a short chunk's buffer was pooled (%d) or kept", recycled.Load())
	}
}

func TestChunkCacheReleasesWhatLeavesIt(t *testing.T) {
	var recycled atomic.Int64
	c := newChunkLRU(16)
	// get returns the chunk with the reference Get takes for its caller.
	get := func(k string) *chunk {
		t.Helper()
		ch, err := c.Get(testCtx(t), chunkKey{k, 0}, func() (*chunk, error) { return newChunk(chunkBufs.get(8), true, &recycled), nil })
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	a := get("a") // a reader holds a
	get("b").release()
	get("c").release() // 24 bytes > 16: a is evicted, but its reader holds it
	if c.Contains(chunkKey{"a", 0}) || recycled.Load() != 0 {
		t.Fatalf("a cached %v, %d recycled; want evicted and none recycled", c.Contains(chunkKey{"a", 0}), recycled.Load())
	}
	a.release()
	if recycled.Load() != 1 {
		t.Fatalf("%d recycled after the reader let go of a, want 1", recycled.Load())
	}
	// A hit takes a reference too.
	b := get("b")
	c.clear()
	if recycled.Load() != 2 || c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("after clear: %d recycled, %d cached (%d bytes)", recycled.Load(), c.Len(), c.Bytes())
	}
	b.release()
	if recycled.Load() != 3 {
		t.Fatalf("%d recycled after the last reader let go of b, want 3", recycled.Load())
	}
}

// Pieces handed out by ReadShared must keep their bytes while they are
// held, however often their chunks are evicted and their neighbours'
// buffers refilled, and buffers are recycled once released.
func TestHeldPiecesSurviveEvictionAndRecycling(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil) // 64 KiB cache of 4 KiB chunks
	var held [][]byte
	var dones []func()
	for off := int64(0); off < records; {
		parts, done, next, err := f.reader.ReadShared(testCtx(t), f.topic, 0, off, 5000, true)
		if err != nil || next <= off {
			t.Fatalf("read at %d: next %d, %v", off, next, err)
		}
		held = append(held, parts...)
		dones = append(dones, done)
		off = next
	}
	if got := bytes.Join(held, nil); !bytes.Equal(got, f.all) {
		t.Fatalf("held pieces changed under eviction (%d bytes, want %d)", len(got), len(f.all))
	}
	if st := f.reader.Stats(); st.ChunksRecycled != 0 {
		t.Fatalf("%d chunk buffers recycled while every piece was held", st.ChunksRecycled)
	}
	for _, done := range dones {
		done()
		done() // idempotent
	}
	// Everything evicted while held is recycled now.
	if st := f.reader.Stats(); st.ChunksRecycled == 0 {
		t.Fatalf("no chunk buffer recycled after release (stats %+v)", st)
	}
	// A replay through recycled buffers reads the same bytes.
	if got := readAll(t, f.reader, f.topic, 0, 3000); !bytes.Equal(got, f.all) {
		t.Fatal("replay through recycled buffers differs")
	}
}
