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
		o := object{r: r, key: key, size: objectSize(s)}
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

// prefetchChunk queues the load of chunk i of o unless it is cached, being
// loaded or queued already. It returns false when the pool queue is full.
// The task loads the chunk only if no reader has loaded it meanwhile (the
// reader is then past it: a second copy would be a wasted GET).
func (r *Reader) prefetchChunk(o object, i int64) bool {
	k := chunkKey{o.key, i}
	if !r.chunks.reserve(k) {
		return true
	}
	ok := r.pool.trySubmit(func(ctx context.Context) {
		tctx, cancel := context.WithTimeout(ctx, r.cfg.TaskTimeout)
		defer cancel()
		c, loaded, err := o.chunkReserved(tctx, i)
		if err != nil {
			r.log.Debug("read-ahead failed", "object", o.key, "chunk", i, "err", err)
			return
		}
		if loaded {
			c.release()
		}
	})
	if ok {
		r.stats.readAheads.Add(1)
	} else {
		r.chunks.unreserve(k)
	}
	return ok
}

// prefetchIndex queues the load of s's .index unless it is cached, being
// loaded or queued already, and the task loads it only if no reader has
// since. It returns false when the pool queue is full.
func (r *Reader) prefetchIndex(s controlplane.RemoteSegment) bool {
	key, err := objectKey(s, "index")
	if err != nil {
		return false
	}
	if !r.offIdx.reserve(key) {
		return true
	}
	ok := r.pool.trySubmit(func(ctx context.Context) {
		tctx, cancel := context.WithTimeout(ctx, r.cfg.TaskTimeout)
		defer cancel()
		if _, _, err := r.offIdx.getReserved(tctx, key, r.offsetIndexLoader(tctx, s, key)); err != nil {
			r.log.Debug("index read-ahead failed", "object", key, "err", err)
		}
	})
	if !ok {
		r.offIdx.unreserve(key)
	}
	return ok
}
