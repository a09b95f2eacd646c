package coldread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/segment"
)

// ErrRemoteRead: a remote object could not be read (the bucket failed, an
// object named by committed metadata is missing or malformed). Retriable
// from the client's point of view: the fetch layer answers
// KAFKA_STORAGE_ERROR.
var ErrRemoteRead = errors.New("coldread: remote read failed")

// ErrNoRemoteSegment: the offset lies above the remote log start but in no
// readable remote segment (a gap while metadata catches up). Retriable.
var ErrNoRemoteSegment = errors.New("coldread: no remote segment holds the offset")

// Segments is where a Reader finds remote segment metadata
// (*controlplane.RemoteLog). ListRemoteSegments returns records sorted by
// base offset, owned by the caller, without network I/O.
type Segments interface {
	ListRemoteSegments(id controlplane.TopicID, p int32) []controlplane.RemoteSegment
}

// LogStarts is where a Reader finds the log start DeleteRecords recorded
// for a partition (*controlplane.RemoteLog), without network I/O. A
// Segments that also implements it has its reads and LogStartOffset start
// there.
type LogStarts interface {
	RemoteLogStart(id controlplane.TopicID, p int32) (int64, bool)
}

// Topics resolves topic names to ids (*controlplane.Store), without network
// I/O.
type Topics interface {
	Topic(name string) (controlplane.Topic, bool)
}

// Reader reads record batches and timestamp lookups from remote segments.
// It implements fetch.RemoteReader. All methods are safe for concurrent use;
// Close stops its workers.
type Reader struct {
	cfg     Config
	bucket  objstore.Bucket
	segs    Segments
	topics  Topics
	log     *slog.Logger
	chunks  *lru[chunkKey, *chunk]
	offIdx  *lru[string, *offsetIndex]
	timeIdx *lru[string, *timeIndex]
	txnIdx  *lru[string, txnList] // txn_index.go
	pool    *pool

	stats struct {
		remoteBytes, getRequests, getBytes, readAheads, errors, recycled atomic.Int64
	}
}

// New returns a Reader over bucket, finding segments in segs and topic ids
// in topics. cfg must pass Validate. logger may be nil (slog.Default).
func New(cfg Config, bucket objstore.Bucket, segs Segments, topics Topics, logger *slog.Logger) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newReader(cfg, bucket, segs, topics, logger)
}

// newReader is New without the chunk size bounds (tests).
func newReader(cfg Config, bucket objstore.Bucket, segs Segments, topics Topics, logger *slog.Logger) (*Reader, error) {
	if err := cfg.validateSizes(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Reader{cfg: cfg, bucket: bucket, segs: segs, topics: topics, log: logger,
		chunks:  newChunkLRU(cfg.CacheBytes),
		offIdx:  newLRU[string](cfg.IndexCacheBytes, (*offsetIndex).bytes),
		timeIdx: newLRU[string](cfg.IndexCacheBytes, (*timeIndex).bytes),
		txnIdx:  newLRU[string](cfg.IndexCacheBytes, txnList.bytes),
		pool:    newPool(cfg.Workers, cfg.QueueLength)}, nil
}

// Close stops the workers and empties the chunk cache (its buffers are
// recycled once no reader holds them); reads in flight fail with ErrClosed.
// Idempotent. The bucket is the caller's to close.
func (r *Reader) Close() {
	r.pool.close()
	r.chunks.clear()
}

// Stats is a snapshot of the Reader's counters.
type Stats struct {
	RemoteFetchBytes int64 // record batch bytes returned by Read
	ChunkHits        int64 // chunk lookups served from the cache (or a load in flight)
	ChunkMisses      int64 // chunk lookups that had to GET
	GetRequests      int64 // ranged GETs issued (chunks and index objects)
	GetBytes         int64 // bytes received from GETs
	ReadAheads       int64 // chunks queued for read-ahead
	IndexHits        int64
	IndexMisses      int64
	Errors           int64 // failed reads and lookups
	CacheBytes       int64 // bytes in the chunk cache now
	ChunksRecycled   int64 // chunk buffers handed back for reuse (evicted and released)
}

// Stats returns the counters so far.
func (r *Reader) Stats() Stats {
	return Stats{RemoteFetchBytes: r.stats.remoteBytes.Load(), ChunkHits: r.chunks.hits.Load(),
		ChunkMisses: r.chunks.misses.Load(), GetRequests: r.stats.getRequests.Load(), GetBytes: r.stats.getBytes.Load(),
		ReadAheads: r.stats.readAheads.Load(),
		IndexHits:  r.offIdx.hits.Load() + r.timeIdx.hits.Load(), IndexMisses: r.offIdx.misses.Load() + r.timeIdx.misses.Load(),
		Errors: r.stats.errors.Load(), CacheBytes: r.chunks.Bytes(), ChunksRecycled: r.stats.recycled.Load()}
}

// segments returns the partition's remote segment records, or nil when the
// topic is unknown.
func (r *Reader) segments(topic string, p int32) []controlplane.RemoteSegment {
	segs, _, _ := r.segmentsAndStart(topic, p)
	return segs
}

// segmentsAndStart returns the partition's remote segment records and the
// first offset of them still retained: their start, or the log start
// DeleteRecords recorded when higher; ok is false when no retained offset
// is in them.
func (r *Reader) segmentsAndStart(topic string, p int32) (segs []controlplane.RemoteSegment, start int64, ok bool) {
	t, found := r.topics.Topic(topic)
	if !found {
		return nil, 0, false
	}
	segs = r.segs.ListRemoteSegments(t.ID, p)
	if start, ok = controlplane.RemoteLogStartOffset(segs); !ok {
		return segs, 0, false
	}
	if ls, isLS := r.segs.(LogStarts); isLS {
		if rec, has := ls.RemoteLogStart(t.ID, p); has && rec > start {
			if end, _ := controlplane.RemoteLogEndOffset(segs); rec > end {
				return segs, 0, false
			}
			start = rec
		}
	}
	return segs, start, true
}

// LogStartOffset is the first retained offset held in readable remote
// segments (at or above the log start DeleteRecords recorded), or -1 when
// there is none.
func (r *Reader) LogStartOffset(topic string, p int32) int64 {
	if _, off, ok := r.segmentsAndStart(topic, p); ok {
		return off
	}
	return -1
}

// LastTieredOffset is the last offset (inclusive) held in readable remote
// segments, or -1 when there are none (ListOffsets LATEST_TIERED, KIP-1005).
func (r *Reader) LastTieredOffset(topic string, p int32) int64 {
	if off, ok := controlplane.RemoteLogEndOffset(r.segments(topic, p)); ok {
		return off
	}
	return -1
}

// RemoteBytes sums the .log sizes of the partition's readable remote
// segments and counts them.
func (r *Reader) RemoteBytes(topic string, p int32) (segments int, bytes int64) {
	for _, s := range r.segments(topic, p) {
		if s.State == controlplane.CopyFinished {
			segments++
			bytes += s.Size
		}
	}
	return segments, bytes
}

// run runs fn on the pool and waits for it until ctx ends. fn gets a context
// bounded by TaskTimeout and the Reader's life, not by ctx: a caller that
// gives up leaves fn to finish filling the caches.
func (r *Reader) run(ctx context.Context, fn func(ctx context.Context) error) error {
	done := make(chan error, 1)
	err := r.pool.submit(ctx, func(pctx context.Context) {
		tctx, cancel := context.WithTimeout(pctx, r.cfg.TaskTimeout)
		defer cancel()
		done <- fn(tctx)
	})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.pool.ctx.Done():
		return ErrClosed
	}
}

// objectSize is the size of the segment's .log object: the record's Size,
// or more for a record that covers a prefix of its objects (a fork's).
// Chunks and parsed indexes are cached by key, so they are always built
// from the object's own bounds; reads stop at the record's.
func objectSize(s controlplane.RemoteSegment) int64 {
	_, size := s.ObjectBounds()
	return size
}

// objectKey returns the segment's object ending in "."+kind.
func objectKey(s controlplane.RemoteSegment, kind string) (string, error) {
	for _, k := range s.Objects {
		if strings.HasSuffix(k, "."+kind) {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: segment %s [%d, %d] records no .%s object", ErrRemoteRead, s.SegmentID, s.BaseOffset, s.EndOffset, kind)
}

// getObject reads the whole of key.
func (r *Reader) getObject(ctx context.Context, key string) ([]byte, error) {
	r.stats.getRequests.Add(1)
	rc, err := r.bucket.GetRange(ctx, key, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrRemoteRead, key, err)
	}
	defer rc.Close()
	buf, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrRemoteRead, key, err)
	}
	r.stats.getBytes.Add(int64(len(buf)))
	return buf, nil
}

// getInto reads [off, off+len(buf)) of key into buf and returns how many
// bytes came (fewer at the end of the object).
func (r *Reader) getInto(ctx context.Context, key string, off int64, buf []byte) (int, error) {
	r.stats.getRequests.Add(1)
	rc, err := r.bucket.GetRange(ctx, key, off, int64(len(buf)))
	if err != nil {
		return 0, fmt.Errorf("%w: GET %s [%d, +%d): %w", ErrRemoteRead, key, off, len(buf), err)
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil // a short read at the end of the object
	}
	if err != nil {
		return 0, fmt.Errorf("%w: GET %s [%d, +%d): %w", ErrRemoteRead, key, off, len(buf), err)
	}
	r.stats.getBytes.Add(int64(n))
	return n, nil
}

// offsetIndexFor returns the segment's parsed .index, from the cache or a GET.
func (r *Reader) offsetIndexFor(ctx context.Context, s controlplane.RemoteSegment) (*offsetIndex, error) {
	key, err := objectKey(s, "index")
	if err != nil {
		return nil, err
	}
	return r.offIdx.Get(ctx, key, r.offsetIndexLoader(ctx, s, key))
}

// offsetIndexLoader returns the load of s's .index, key: a GET and a parse.
func (r *Reader) offsetIndexLoader(ctx context.Context, s controlplane.RemoteSegment, key string) func() (*offsetIndex, error) {
	return func() (*offsetIndex, error) {
		b, err := r.getObject(ctx, key)
		if err != nil {
			return nil, err
		}
		x, err := parseOffsetIndex(b, s.BaseOffset, objectSize(s))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRemoteRead, key, err)
		}
		return x, nil
	}
}

// timeIndexFor returns the segment's parsed .timeindex.
func (r *Reader) timeIndexFor(ctx context.Context, s controlplane.RemoteSegment) (*timeIndex, error) {
	key, err := objectKey(s, "timeindex")
	if err != nil {
		return nil, err
	}
	return r.timeIdx.Get(ctx, key, func() (*timeIndex, error) {
		b, err := r.getObject(ctx, key)
		if err != nil {
			return nil, err
		}
		objEnd, _ := s.ObjectBounds()
		x, err := parseTimeIndex(b, s.BaseOffset, objEnd)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRemoteRead, key, err)
		}
		return x, nil
	})
}

// outOfRange is the error for an offset below the remote log start.
func outOfRange(offset, start int64) error {
	return fmt.Errorf("%w: offset %d below the remote log start %d", segment.ErrOffsetOutOfRange, offset, start)
}
