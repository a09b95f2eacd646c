package coldread

import (
	"context"

	"github.com/shale-io/shale/controlplane"
)

// prefetch queues on the pool the loads of the chunks that cover n bytes of
// the partition's remote log from position pos of segment s on, going on
// through the following segments (and their .index objects), so that the
// GETs run concurrently with each other and with the read that asked. A
// chunk already cached or being loaded is skipped. Best effort: the walk
// stops when the pool queue is full, at the first gap in the metadata, and
// after half the chunk cache (read-ahead must not evict what it fetched
// before a reader gets to it).
//
// A queued load marks its chunk as loading only once a worker runs it, so a
// reader that gets to a chunk first loads it itself and never waits on a
// task stuck in the queue behind it.
func (r *Reader) prefetch(segs []controlplane.RemoteSegment, s controlplane.RemoteSegment, pos, n int64) {
	n = min(n, r.cfg.CacheBytes/2)
	cs := r.cfg.ChunkBytes
	for first := true; n > 0; first = false {
		if !first && !r.prefetchIndex(s) {
			return
		}
		key, err := objectKey(s, "log")
		if err != nil {
			return
		}
		o := object{r: r, key: key, size: s.Size}
		for i := pos / cs; i*cs < s.Size && n > 0; i++ {
			n -= min((i+1)*cs, s.Size) - max(pos, i*cs)
			if !r.prefetchChunk(o, i) {
				return
			}
		}
		next, ok := controlplane.SegmentForOffset(segs, s.EndOffset+1)
		if !ok {
			return
		}
		s, pos = next, 0
	}
}

// prefetchChunk queues the load of chunk i of o unless it is cached or
// being loaded. It returns false when the pool queue is full.
func (r *Reader) prefetchChunk(o object, i int64) bool {
	k := chunkKey{o.key, i}
	if r.chunks.Contains(k) {
		return true
	}
	ok := r.pool.trySubmit(func(ctx context.Context) {
		if r.chunks.Contains(k) {
			return // a reader got there first
		}
		tctx, cancel := context.WithTimeout(ctx, r.cfg.TaskTimeout)
		defer cancel()
		c, err := o.chunk(tctx, i)
		if err != nil {
			r.log.Debug("read-ahead failed", "object", o.key, "chunk", i, "err", err)
			return
		}
		c.release()
	})
	if ok {
		r.stats.readAheads.Add(1)
	}
	return ok
}

// prefetchIndex queues the load of s's .index unless it is cached or being
// loaded. It returns false when the pool queue is full.
func (r *Reader) prefetchIndex(s controlplane.RemoteSegment) bool {
	key, err := objectKey(s, "index")
	if err != nil || r.offIdx.Contains(key) {
		return err == nil
	}
	return r.pool.trySubmit(func(ctx context.Context) {
		if r.offIdx.Contains(key) {
			return
		}
		tctx, cancel := context.WithTimeout(ctx, r.cfg.TaskTimeout)
		defer cancel()
		if _, err := r.offsetIndexFor(tctx, s); err != nil {
			r.log.Debug("index read-ahead failed", "object", key, "err", err)
		}
	})
}
