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
	var h batch.Header
	var err error
	cs := o.r.cfg.ChunkBytes
	if i := pos / cs; (pos+batch.HeaderSize-1)/cs == i {
		// Within one chunk: parse in place.
		c, cerr := o.chunk(ctx, i)
		if cerr != nil {
			return batch.Header{}, cerr
		}
		lo := pos - i*cs
		if lo+batch.HeaderSize > int64(len(c.b)) {
			c.release()
			return batch.Header{}, fmt.Errorf("%w: %s: chunk %d holds %d bytes, need byte %d", ErrRemoteRead, o.key, i, len(c.b), pos+batch.HeaderSize-1)
		}
		h, err = batch.ParseHeader(c.b[lo : lo+batch.HeaderSize])
		c.release()
	} else {
		var b []byte
		if b, err = o.appendRange(ctx, nil, pos, pos+batch.HeaderSize); err != nil {
			return batch.Header{}, err
		}
		h, err = batch.ParseHeader(b)
	}
	if err != nil {
		return h, fmt.Errorf("%w: %s at %d: %w", ErrRemoteRead, o.key, pos, err)
	}
	if pos+int64(h.Size()) > o.size {
		return h, fmt.Errorf("%w: %s: batch at %d of %d bytes runs past the object's %d bytes", ErrRemoteRead, o.key, pos, h.Size(), o.size)
	}
	return h, nil
}

// slices appends to dst the pieces of cached chunks that hold [from, to)
// of the object, in order, without copying, and to held the chunks it
// took a reference on (one per piece): the pieces stay valid until those
// are released. On error it releases what it took and returns dst and held
// as given.
func (o object) slices(ctx context.Context, dst [][]byte, held []*chunk, from, to int64) ([][]byte, []*chunk, error) {
	cs := o.r.cfg.ChunkBytes
	n0, h0 := len(dst), len(held)
	for pos := from; pos < to; {
		i := pos / cs
		c, err := o.chunk(ctx, i)
		if err == nil {
			held = append(held, c)
			if lo, hi := pos-i*cs, min(to-i*cs, int64(len(c.b))); lo < hi {
				dst = append(dst, c.b[lo:hi:hi])
				pos = i*cs + hi
				continue
			}
			err = fmt.Errorf("%w: %s: chunk %d holds %d bytes, need byte %d", ErrRemoteRead, o.key, i, len(c.b), pos)
		}
		releaseAll(held[h0:])
		return dst[:n0], held[:h0], err
	}
	return dst, held, nil
}

// appendRange appends [from, to) of the object, copied out of its chunks,
// to dst.
func (o object) appendRange(ctx context.Context, dst []byte, from, to int64) ([]byte, error) {
	parts, held, err := o.slices(ctx, nil, nil, from, to)
	if err != nil {
		return nil, err
	}
	defer releaseAll(held)
	out := slices.Grow(dst, int(to-from))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// chunk returns aligned chunk i, from the cache or one ranged GET into a
// recycled buffer, with a reference the caller must release.
func (o object) chunk(ctx context.Context, i int64) (*chunk, error) {
	return o.r.chunks.Get(ctx, chunkKey{o.key, i}, o.loader(ctx, i))
}

// chunkReserved is chunk for a read-ahead that reserved the chunk
// (lru.reserve): ok is false, and nothing is read, when a reader has loaded
// the chunk since.
func (o object) chunkReserved(ctx context.Context, i int64) (c *chunk, ok bool, err error) {
	return o.r.chunks.getReserved(ctx, chunkKey{o.key, i}, o.loader(ctx, i))
}

// loader returns the load of chunk i: one ranged GET into a recycled
// buffer.
func (o object) loader(ctx context.Context, i int64) func() (*chunk, error) {
	return func() (*chunk, error) {
		cs := o.r.cfg.ChunkBytes
		length := min(cs, o.size-i*cs)
		pooled := length > cs/2
		var b []byte
		if pooled {
			b = chunkBufs.get(int(cs))[:length]
		} else {
			b = make([]byte, length)
		}
		n, err := o.r.getInto(ctx, o.key, i*cs, b)
		if err == nil && int64(n) != length {
			err = fmt.Errorf("%w: %s chunk %d: %d bytes, want %d (object shorter than its metadata)", ErrRemoteRead, o.key, i, n, length)
		}
		if err != nil {
			if pooled {
				chunkBufs.put(b)
			}
			return nil, err
		}
		return newChunk(b, pooled, &o.r.stats.recycled), nil
	}
}

// releaseAll releases every chunk of held.
func releaseAll(held []*chunk) {
	for _, c := range held {
		c.release()
	}
}
