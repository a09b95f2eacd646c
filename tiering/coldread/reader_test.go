package coldread

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

const records = 3000

// readAll replays the partition from offset with fetches of maxBytes.
func readAll(t *testing.T, r *Reader, topic string, offset int64, maxBytes int) []byte {
	t.Helper()
	var out []byte
	end := r.LastTieredOffset(topic, 0)
	for offset <= end {
		b, next, err := r.Read(testCtx(t), topic, 0, offset, maxBytes, true)
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		if len(b) == 0 || next <= offset {
			t.Fatalf("read at %d returned %d bytes, next %d", offset, len(b), next)
		}
		if got := lastNext(t, b); got != next {
			t.Fatalf("read at %d: next %d, batches end at %d", offset, next, got)
		}
		out = append(out, b...)
		offset = next
	}
	return out
}

func TestReadReplaysByteIdentical(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	if got := f.reader.LogStartOffset(f.topic, 0); got != 0 {
		t.Fatalf("log start %d", got)
	}
	if got := f.reader.LastTieredOffset(f.topic, 0); got != records-1 {
		t.Fatalf("last tiered offset %d, want %d", got, records-1)
	}
	for _, maxBytes := range []int{1, 3000, 50_000, 1 << 20} {
		if got := readAll(t, f.reader, f.topic, 0, maxBytes); !bytes.Equal(got, f.all) {
			t.Fatalf("maxBytes %d: replay differs from the log (%d bytes, want %d)", maxBytes, len(got), len(f.all))
		}
	}
	// One read of everything crosses segments.
	b, next, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 1<<30, true)
	if err != nil || next != records || !bytes.Equal(b, f.all) {
		t.Fatalf("whole read: %d bytes, next %d, %v", len(b), next, err)
	}
	if n, size := f.reader.RemoteBytes(f.topic, 0); n != len(f.segs) || size != int64(len(f.all)) {
		t.Fatalf("remote bytes: %d segments %d bytes, want %d and %d", n, size, len(f.segs), len(f.all))
	}
	st := f.reader.Stats()
	if st.RemoteFetchBytes < 4*int64(len(f.all)) || st.GetRequests == 0 || st.ChunkMisses == 0 || st.ChunkHits == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReadFromTheMiddleOfABatch(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	for _, off := range []int64{5, 1234, f.segs[1].seg.BaseOffset, f.segs[1].seg.BaseOffset - 1, records - 1} {
		b, next, err := f.reader.Read(testCtx(t), f.topic, 0, off, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset > off || h.LastOffset() < off || h.Size() != len(b) || next != h.NextOffset() {
			t.Fatalf("offset %d: batch [%d, %d] of %d bytes (read %d), next %d", off, h.BaseOffset, h.LastOffset(), h.Size(), len(b), next)
		}
	}
	// Without minOne a budget below one batch returns nothing.
	b, next, err := f.reader.Read(testCtx(t), f.topic, 0, 100, 10, false)
	if err != nil || len(b) != 0 || next != 100 {
		t.Fatalf("tiny budget: %d bytes, next %d, %v", len(b), next, err)
	}
	// Past the remote data: nothing, no error.
	b, next, err = f.reader.Read(testCtx(t), f.topic, 0, records, 1000, true)
	if err != nil || len(b) != 0 || next != records {
		t.Fatalf("past the end: %d bytes, next %d, %v", len(b), next, err)
	}
}

func TestReadBelowRemoteLogStartIsOutOfRange(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	// Retention starts deleting the first segment: it is no longer readable.
	first := f.segs[0].seg
	first.State = controlplane.DeleteStarted
	rl := f.reader.segs.(*controlplane.RemoteLog)
	if _, err := rl.PutRemoteSegment(testCtx(t), first, first.Revision); err != nil {
		t.Fatal(err)
	}
	start := f.segs[1].seg.BaseOffset
	if got := f.reader.LogStartOffset(f.topic, 0); got != start {
		t.Fatalf("log start %d, want %d", got, start)
	}
	if _, _, err := f.reader.Read(testCtx(t), f.topic, 0, start-1, 1000, true); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	if _, _, err := f.reader.Read(testCtx(t), "unknown", 0, 0, 1000, true); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read of an unknown topic: %v", err)
	}
	if got := readAll(t, f.reader, f.topic, start, 8000); !bytes.Equal(got, f.all[len(f.segs[0].data):]) {
		t.Fatal("replay from the new log start differs")
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	for _, i := range []int64{0, 1, 9, 10, 777, f.segs[2].seg.BaseOffset, records - 1} {
		for _, delta := range []int64{0, -5} { // exact, and between records i-1 and i
			if i == 0 && delta < 0 {
				continue
			}
			off, ts, ok, err := f.reader.OffsetForTimestamp(testCtx(t), f.topic, 0, tsBase+10*i+delta)
			if err != nil || !ok || off != i || ts != tsBase+10*i {
				t.Fatalf("timestamp of record %d%+d: offset %d ts %d ok %v err %v", i, delta, off, ts, ok, err)
			}
		}
	}
	if _, _, ok, err := f.reader.OffsetForTimestamp(testCtx(t), f.topic, 0, tsBase+10*records); ok || err != nil {
		t.Fatalf("a timestamp after every record: ok %v err %v", ok, err)
	}
	if off, _, ok, _ := f.reader.OffsetForTimestamp(testCtx(t), f.topic, 0, 0); !ok || off != 0 {
		t.Fatalf("timestamp 0: offset %d ok %v", off, ok)
	}
}

func TestReadAheadFetchesTheNextChunk(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	seg := f.segs[0].seg
	key, _ := objectKey(seg, "log")
	if _, _, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 100, true); err != nil {
		t.Fatal(err)
	}
	// The read touched chunk 0; chunk 1 comes by read-ahead on the pool.
	if err := proctest.Poll(10*time.Second, 5*time.Millisecond, func() bool { return f.reader.chunks.Contains(chunkKey{key, 1}) }); err != nil {
		t.Fatalf("chunk 1 never read ahead (stats %+v)", f.reader.Stats())
	}
	if f.reader.Stats().ReadAheads == 0 {
		t.Fatal("read-ahead not counted")
	}
}

func TestReadAheadOff(t *testing.T) {
	cfg := smallConfig()
	cfg.ReadAhead = false
	f := tieredFixture(t, records, cfg, nil)
	if _, _, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 100, true); err != nil {
		t.Fatal(err)
	}
	// Drain the pool: a task queued after the read runs after any read-ahead.
	if err := f.reader.run(testCtx(t), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if st := f.reader.Stats(); st.ReadAheads != 0 || f.reader.chunks.Len() != 1 {
		t.Fatalf("read-ahead off, yet %d read-aheads and %d chunks cached", st.ReadAheads, f.reader.chunks.Len())
	}
}

func TestIndexAndChunksAreFetchedOnce(t *testing.T) {
	cfg := smallConfig()
	cfg.CacheBytes = 16 << 20
	cfg.ReadAhead = false
	f := tieredFixture(t, records, cfg, nil)
	readAll(t, f.reader, f.topic, 0, 2000)
	first := f.reader.Stats()
	chunks := int64(0)
	for _, s := range f.segs {
		chunks += (s.seg.Size + cfg.ChunkBytes - 1) / cfg.ChunkBytes
	}
	// One GET per chunk and one per .index object.
	if want := chunks + int64(len(f.segs)); first.GetRequests != want {
		t.Fatalf("%d GETs for %d chunks and %d indexes", first.GetRequests, chunks, len(f.segs))
	}
	readAll(t, f.reader, f.topic, 0, 5000)
	if again := f.reader.Stats(); again.GetRequests != first.GetRequests {
		t.Fatalf("a second replay issued %d more GETs", again.GetRequests-first.GetRequests)
	}
}

// faultyBucket fails GetRange while failing is set, and blocks it while
// gate is non-nil (until the gate closes).
type faultyBucket struct {
	objstore.Bucket
	failing atomic.Bool
	mu      sync.Mutex
	gate    chan struct{}
	gets    atomic.Int64
}

var errInjected = errors.New("injected: 503 Service Unavailable")

func (b *faultyBucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	b.gets.Add(1)
	b.mu.Lock()
	gate := b.gate
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if b.failing.Load() {
		return nil, errInjected
	}
	return b.Bucket.GetRange(ctx, key, off, length)
}

func TestRemoteFailureIsAnErrorThenRecovers(t *testing.T) {
	var fb *faultyBucket
	f := tieredFixture(t, records, smallConfig(), func(b objstore.Bucket) objstore.Bucket {
		fb = &faultyBucket{Bucket: b}
		return fb
	})
	fb.failing.Store(true)
	b, _, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 1000, true)
	if !errors.Is(err, ErrRemoteRead) || !errors.Is(err, errInjected) || len(b) != 0 {
		t.Fatalf("read with a failing bucket: %d bytes, %v", len(b), err)
	}
	if _, _, _, err := f.reader.OffsetForTimestamp(testCtx(t), f.topic, 0, tsBase); !errors.Is(err, ErrRemoteRead) {
		t.Fatalf("timestamp lookup with a failing bucket: %v", err)
	}
	if f.reader.Stats().Errors < 2 {
		t.Fatalf("errors not counted: %+v", f.reader.Stats())
	}
	fb.failing.Store(false)
	if got := readAll(t, f.reader, f.topic, 0, 4000); !bytes.Equal(got, f.all) {
		t.Fatal("replay after recovery differs")
	}
}

func TestCallerDeadlineLeavesTheReadToFillTheCache(t *testing.T) {
	cfg := smallConfig()
	cfg.ReadAhead = false
	var fb *faultyBucket
	f := tieredFixture(t, records, cfg, func(b objstore.Bucket) objstore.Bucket {
		fb = &faultyBucket{Bucket: b}
		return fb
	})
	gate := make(chan struct{})
	fb.mu.Lock()
	fb.gate = gate
	fb.mu.Unlock()
	ctx := proctest.Context(t, 50*time.Millisecond)
	if _, _, err := f.reader.Read(ctx, f.topic, 0, 0, 1000, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	fb.mu.Lock()
	fb.gate = nil
	fb.mu.Unlock()
	close(gate)
	// The abandoned task finishes and caches what it read: poll for it.
	key, _ := objectKey(f.segs[0].seg, "log")
	if err := proctest.Poll(10*time.Second, 5*time.Millisecond, func() bool {
		return f.reader.chunks.Contains(chunkKey{key, 0}) && fb.gets.Load() >= 2
	}); err != nil {
		t.Fatal("the abandoned read never filled the cache")
	}
	gets := fb.gets.Load()
	b, _, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 1000, true)
	if err != nil || !bytes.HasPrefix(f.all, b) || len(b) == 0 {
		t.Fatalf("retry: %d bytes, %v", len(b), err)
	}
	if fb.gets.Load() != gets {
		t.Fatalf("the retry issued %d GETs; the cache should have served it", fb.gets.Load()-gets)
	}
}

func TestClosedReader(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	f.reader.Close()
	f.reader.Close()
	if _, _, err := f.reader.Read(testCtx(t), f.topic, 0, 0, 1000, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
}
