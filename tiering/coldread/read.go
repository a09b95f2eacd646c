package coldread

import (
	"context"
	"fmt"
	"slices"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment/batch"
)

// Read returns whole record batches from the partition's remote segments,
// starting with the batch that holds offset and going on through following
// segments, at most maxBytes in all except that with minOne the first batch
// is returned even when larger (KIP-74). nextOffset is the offset after the
// last batch returned (offset itself when nothing is returned: offset past
// the remote data, or a first batch over maxBytes without minOne). The
// caller owns batches.
//
// Errors: an offset below the remote log start (or no remote data) wraps
// segment.ErrOffsetOutOfRange; bucket failures wrap ErrRemoteRead; an offset
// inside the remote range that no segment holds, ErrNoRemoteSegment; a ctx
// that ends first, its error (the read goes on in the background).
func (r *Reader) Read(ctx context.Context, topic string, p int32, offset int64, maxBytes int, minOne bool) (batches []byte, nextOffset int64, err error) {
	segs := r.segments(topic, p)
	start, ok := controlplane.RemoteLogStartOffset(segs)
	if !ok {
		return nil, offset, outOfRange(offset, -1)
	}
	if offset < start {
		return nil, offset, outOfRange(offset, start)
	}
	err = r.run(ctx, func(ctx context.Context) error {
		var err error
		batches, nextOffset, err = r.read(ctx, segs, offset, maxBytes, minOne)
		return err
	})
	if err != nil {
		r.stats.errors.Add(1)
		return nil, offset, err
	}
	r.stats.remoteBytes.Add(int64(len(batches)))
	return batches, nextOffset, nil
}

// read is Read on a pool worker.
func (r *Reader) read(ctx context.Context, segs []controlplane.RemoteSegment, offset int64, maxBytes int, minOne bool) ([]byte, int64, error) {
	out := make([]byte, 0, min(maxBytes, 16<<20))
	next := offset
	end, _ := controlplane.RemoteLogEndOffset(segs)
	for next <= end {
		s, ok := controlplane.SegmentForOffset(segs, next)
		if !ok {
			if len(out) > 0 {
				break
			}
			return nil, offset, fmt.Errorf("%w: offset %d", ErrNoRemoteSegment, next)
		}
		var n int64
		var full bool
		var err error
		out, n, full, err = r.readSegment(ctx, s, next, maxBytes-len(out), minOne && len(out) == 0, out)
		if err != nil {
			if len(out) > 0 {
				break // serve what is read; the next read reports the error
			}
			return nil, offset, err
		}
		if full {
			next = max(n, next)
			break
		}
		next = s.EndOffset + 1
		if n > next {
			next = n
		}
	}
	r.readAhead(segs, next)
	if len(out) == 0 {
		return nil, offset, nil
	}
	return out, next, nil
}

// readSegment appends to dst whole batches of s from the one holding offset,
// at most maxBytes (minOne: at least one). full is true when the budget
// stopped the read before the end of the segment; next is the offset after
// the last batch read (offset when none). On error dst is returned as given.
func (r *Reader) readSegment(ctx context.Context, s controlplane.RemoteSegment, offset int64, maxBytes int, minOne bool, dst []byte) (_ []byte, next int64, full bool, err error) {
	idx, err := r.offsetIndexFor(ctx, s)
	if err != nil {
		return dst, offset, false, err
	}
	key, err := objectKey(s, "log")
	if err != nil {
		return dst, offset, false, err
	}
	obj := object{r: r, key: key, size: s.Size}
	pos := idx.lookup(offset)
	var h batch.Header
	for {
		if pos >= s.Size {
			return dst, offset, false, nil // offset lies past the segment's batches
		}
		if h, err = obj.header(ctx, pos); err != nil {
			return dst, offset, false, err
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += int64(h.Size())
	}
	from, to, next := pos, pos, offset
	// Jump over whole batches with the index: its entries sit at batch
	// starts, so the last entry within the budget bounds a run of whole
	// batches; headers are scanned only from there.
	if p := idx.floorPosition(from + int64(maxBytes)); p > from && p < s.Size {
		if jh, err := obj.header(ctx, p); err == nil {
			to, h, next = p, jh, jh.BaseOffset
		}
	}
	for {
		size := int64(h.Size())
		if to-from+size > int64(maxBytes) && !(to == from && minOne) {
			full = true
			break
		}
		to += size
		next = h.NextOffset()
		if to >= s.Size {
			break
		}
		if h, err = obj.header(ctx, to); err != nil {
			if to > from {
				break
			}
			return dst, offset, false, err
		}
	}
	if to == from {
		return dst, offset, full, nil
	}
	out, err := obj.appendRange(ctx, dst, from, to)
	if err != nil {
		return dst, offset, false, err
	}
	return out, next, full, nil
}

// object reads a .log object through the chunk cache.
type object struct {
	r    *Reader
	key  string
	size int64
}

// header parses the batch header at pos.
func (o object) header(ctx context.Context, pos int64) (batch.Header, error) {
	if pos+batch.HeaderSize > o.size {
		return batch.Header{}, fmt.Errorf("%w: %s: batch header at %d runs past the object's %d bytes", ErrRemoteRead, o.key, pos, o.size)
	}
	var b []byte
	cs := o.r.cfg.ChunkBytes
	if i := pos / cs; (pos+batch.HeaderSize-1)/cs == i {
		// Within one chunk: parse in place.
		c, err := o.chunk(ctx, i)
		if err != nil {
			return batch.Header{}, err
		}
		if lo := pos - i*cs; lo+batch.HeaderSize <= int64(len(c)) {
			b = c[lo : lo+batch.HeaderSize]
		}
	}
	if b == nil {
		var err error
		if b, err = o.appendRange(ctx, nil, pos, pos+batch.HeaderSize); err != nil {
			return batch.Header{}, err
		}
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return h, fmt.Errorf("%w: %s at %d: %w", ErrRemoteRead, o.key, pos, err)
	}
	if pos+int64(h.Size()) > o.size {
		return h, fmt.Errorf("%w: %s: batch at %d of %d bytes runs past the object's %d bytes", ErrRemoteRead, o.key, pos, h.Size(), o.size)
	}
	return h, nil
}

// appendRange appends [from, to) of the object, copied out of its chunks,
// to dst.
func (o object) appendRange(ctx context.Context, dst []byte, from, to int64) ([]byte, error) {
	cs := o.r.cfg.ChunkBytes
	out := slices.Grow(dst, int(to-from))
	for pos := from; pos < to; {
		i := pos / cs
		c, err := o.chunk(ctx, i)
		if err != nil {
			return nil, err
		}
		lo, hi := pos-i*cs, min(to-i*cs, int64(len(c)))
		if lo >= hi {
			return nil, fmt.Errorf("%w: %s: chunk %d holds %d bytes, need byte %d", ErrRemoteRead, o.key, i, len(c), pos)
		}
		out = append(out, c[lo:hi]...)
		pos = i*cs + hi
	}
	return out, nil
}

// chunk returns aligned chunk i, from the cache or one ranged GET.
func (o object) chunk(ctx context.Context, i int64) ([]byte, error) {
	cs := o.r.cfg.ChunkBytes
	return o.r.chunks.Get(ctx, chunkKey{o.key, i}, func() ([]byte, error) {
		length := min(cs, o.size-i*cs)
		b, err := o.r.get(ctx, o.key, i*cs, length)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) != length {
			return nil, fmt.Errorf("%w: %s chunk %d: %d bytes, want %d (object shorter than its metadata)", ErrRemoteRead, o.key, i, len(b), length)
		}
		return b, nil
	})
}

// readAhead queues the chunk that holds offset next, if it is not cached,
// for a sequential reader's next fetch. Best effort: dropped when the pool
// queue is full.
func (r *Reader) readAhead(segs []controlplane.RemoteSegment, next int64) {
	if !r.cfg.ReadAhead {
		return
	}
	s, ok := controlplane.SegmentForOffset(segs, next)
	if !ok {
		return
	}
	key, err := objectKey(s, "log")
	if err != nil {
		return
	}
	// The chunk holding next: from the index when it is cached, else the
	// segment's first chunk when next is its base (a new segment).
	var pos int64
	if next != s.BaseOffset {
		idxKey, err := objectKey(s, "index")
		if err != nil {
			return
		}
		idx, ok := r.offIdx.peek(idxKey)
		if !ok {
			return
		}
		pos = idx.lookup(next)
	}
	cs := r.cfg.ChunkBytes
	// The read that ended at next touched the chunk holding pos already
	// when it is the same segment; what a sequential reader needs next is
	// the chunk after the one holding next's batch start.
	for _, i := range []int64{pos / cs, pos/cs + 1} {
		if i*cs >= s.Size || r.chunks.Contains(chunkKey{key, i}) {
			continue
		}
		o := object{r: r, key: key, size: s.Size}
		if r.pool.trySubmit(func(ctx context.Context) {
			tctx, cancel := context.WithTimeout(ctx, r.cfg.TaskTimeout)
			defer cancel()
			if _, err := o.chunk(tctx, i); err != nil {
				r.log.Debug("read-ahead failed", "object", key, "chunk", i, "err", err)
			}
		}) {
			r.stats.readAheads.Add(1)
		}
		return
	}
}
