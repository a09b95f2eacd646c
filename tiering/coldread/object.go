package coldread

import (
	"context"
	"fmt"
	"slices"

	"github.com/shale-io/shale/segment/batch"
)

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

// slices appends to dst the pieces of cached chunks that hold [from, to)
// of the object, in order, without copying: the pieces share the chunks'
// memory, which the cache never modifies.
func (o object) slices(ctx context.Context, dst [][]byte, from, to int64) ([][]byte, error) {
	cs := o.r.cfg.ChunkBytes
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
		dst = append(dst, c[lo:hi:hi])
		pos = i*cs + hi
	}
	return dst, nil
}

// appendRange appends [from, to) of the object, copied out of its chunks,
// to dst.
func (o object) appendRange(ctx context.Context, dst []byte, from, to int64) ([]byte, error) {
	parts, err := o.slices(ctx, nil, from, to)
	if err != nil {
		return nil, err
	}
	out := slices.Grow(dst, int(to-from))
	for _, p := range parts {
		out = append(out, p...)
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
