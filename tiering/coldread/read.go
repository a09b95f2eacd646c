package coldread

import (
	"context"
	"fmt"
	"sync"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment/batch"
)

// Read returns whole record batches from the partition's remote segments,
// starting with the batch that holds offset and going on through following
// segments, at most maxBytes in all except that with minOne the first batch
// is returned even when larger (KIP-74). nextOffset is the offset after the
// last batch returned (offset itself when nothing is returned: offset past
// the remote data, or a first batch over maxBytes without minOne). The
// caller owns batches: Read is ReadShared with the pieces copied into one
// slice.
//
// Errors: an offset below the remote log start (or no remote data) wraps
// segment.ErrOffsetOutOfRange; bucket failures wrap ErrRemoteRead; an offset
// inside the remote range that no segment holds, ErrNoRemoteSegment; a ctx
// that ends first, its error (the read goes on in the background).
func (r *Reader) Read(ctx context.Context, topic string, p int32, offset int64, maxBytes int, minOne bool) (batches []byte, nextOffset int64, err error) {
	parts, done, nextOffset, err := r.ReadShared(ctx, topic, p, offset, maxBytes, minOne)
	if err != nil || len(parts) == 0 {
		return nil, nextOffset, err
	}
	defer done()
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	batches = make([]byte, 0, n)
	for _, b := range parts {
		batches = append(batches, b...)
	}
	return batches, nextOffset, nil
}

// ReadShared is Read without the copy: the batches come as pieces of the
// cached chunks they lie in, in order, and their concatenation is what Read
// returns (a batch that straddles two chunks comes in two pieces). The
// pieces share memory with the chunk cache: the caller must not modify
// them, and must call release (once, never nil) when it no longer reads
// them, at the latest once it has written them out; they stay valid until
// then, evicted or not. Past release, their buffers may be refilled by
// another GET. A caller that never calls release only keeps the buffers
// from being recycled (the GC frees them). Arguments, other results and
// errors as Read.
func (r *Reader) ReadShared(ctx context.Context, topic string, p int32, offset int64, maxBytes int, minOne bool) (batches [][]byte, release func(), nextOffset int64, err error) {
	noop := func() {}
	segs, start, ok := r.segmentsAndStart(topic, p)
	if !ok {
		return nil, noop, offset, outOfRange(offset, -1)
	}
	if offset < start {
		return nil, noop, offset, outOfRange(offset, start)
	}
	// The task fills these; they are read only once run has seen it end.
	// (A caller that gives up leaves the chunks the task holds to the GC.)
	var parts [][]byte
	var held []*chunk
	var next int64
	err = r.run(ctx, func(ctx context.Context) error {
		var err error
		parts, held, next, err = r.read(ctx, segs, offset, maxBytes, minOne)
		return err
	})
	if err != nil {
		r.stats.errors.Add(1)
		return nil, noop, offset, err
	}
	for _, b := range parts {
		r.stats.remoteBytes.Add(int64(len(b)))
	}
	if len(held) == 0 {
		return parts, noop, next, nil
	}
	var once sync.Once
	return parts, func() { once.Do(func() { releaseAll(held) }) }, next, nil
}

// read is ReadShared on a pool worker; held are the chunks the pieces lie
// in, one reference per piece, to be released by the caller.
func (r *Reader) read(ctx context.Context, segs []controlplane.RemoteSegment, offset int64, maxBytes int, minOne bool) (_ [][]byte, held []*chunk, _ int64, _ error) {
	var out [][]byte
	n := 0 // bytes in out
	next := offset
	end, _ := controlplane.RemoteLogEndOffset(segs)
	for next <= end {
		s, ok := controlplane.SegmentForOffset(segs, next)
		if !ok {
			if n > 0 {
				break
			}
			return nil, nil, offset, fmt.Errorf("%w: offset %d", ErrNoRemoteSegment, next)
		}
		var m int
		var after int64
		var full bool
		var err error
		out, held, m, after, full, err = r.readSegment(ctx, segs, s, next, maxBytes-n, minOne && n == 0, out, held)
		if err != nil {
			if n > 0 {
				break // serve what is read; the next read reports the error
			}
			return nil, nil, offset, err
		}
		n += m
		if full {
			next = max(after, next)
			break
		}
		next = max(s.EndOffset+1, after)
	}
	if n == 0 {
		return nil, nil, offset, nil
	}
	return out, held, next, nil
}

// readSegment appends to dst the pieces of whole batches of s from the one
// holding offset, at most maxBytes (minOne: at least one), and to held the
// chunks they lie in, and returns how many bytes it added. full is true
// when the budget stopped the read before the end of the segment; next is
// the offset after the last batch read (offset when none). On error dst
// and held are returned as given. With read-ahead
// on, it first queues the loads of the chunks the read will need after its
// first one and of those a sequential reader will need next.
func (r *Reader) readSegment(ctx context.Context, segs []controlplane.RemoteSegment, s controlplane.RemoteSegment, offset int64, maxBytes int, minOne bool, dst [][]byte, held []*chunk) (_ [][]byte, _ []*chunk, added int, next int64, full bool, err error) {
	idx, err := r.offsetIndexFor(ctx, s)
	if err != nil {
		return dst, held, 0, offset, false, err
	}
	key, err := objectKey(s, "log")
	if err != nil {
		return dst, held, 0, offset, false, err
	}
	obj := object{r: r, key: key, size: objectSize(s)}
	pos := idx.lookup(offset)
	if r.cfg.ReadAhead {
		cs := r.cfg.ChunkBytes
		from := (pos/cs + 1) * cs // the read loads pos's chunk itself
		want := int64(maxBytes) + max(int64(maxBytes), int64(r.cfg.ReadAheadChunks)*cs)
		r.prefetch(segs, s, from, want-(from-pos))
	}
	var h batch.Header
	for {
		if pos >= s.Size {
			return dst, held, 0, offset, false, nil // offset lies past the segment's batches
		}
		if h, err = obj.header(ctx, pos); err != nil {
			return dst, held, 0, offset, false, err
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += int64(h.Size())
	}
	from, to := pos, pos
	next = offset
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
			return dst, held, 0, offset, false, err
		}
	}
	if to == from {
		return dst, held, 0, offset, full, nil
	}
	out, held, err := obj.slices(ctx, dst, held, from, to)
	if err != nil {
		return dst, held, 0, offset, false, err
	}
	return out, held, int(to - from), next, full, nil
}
