package coldread

import (
	"sync"
	"sync/atomic"
)

// chunk is one cached aligned range of a .log object. Its memory is
// counted: the cache holds one reference while the chunk is cached, and
// every reader of its bytes one more until it releases them. When the count
// falls to zero (evicted, and no reader holds it) the buffer goes back to
// chunkBufs for the next GET, so that a node streaming history through the
// cache fills the same memory again instead of touching fresh pages (on the
// machines we measured, first touch of fresh memory costs more than the GET
// itself). A chunk that is never released is simply left to the GC.
type chunk struct {
	b    []byte
	refs atomic.Int32
	// pooled: b came from chunkBufs (capacity: a whole chunk) and goes
	// back there. A last chunk of an object that fills at most half a chunk
	// has a buffer of its own size, left to the GC, so that small segments
	// do not pin whole-chunk buffers.
	pooled bool
	// recycled counts buffers handed back for reuse (Stats).
	recycled *atomic.Int64
}

// newChunk returns a chunk over b holding one reference (the cache's).
func newChunk(b []byte, pooled bool, recycled *atomic.Int64) *chunk {
	c := &chunk{b: b, pooled: pooled, recycled: recycled}
	c.refs.Store(1)
	return c
}

// acquire takes a reference, unless the last one is already gone (then the
// buffer may be reused: the caller must look the chunk up again).
func (c *chunk) acquire() bool {
	for {
		n := c.refs.Load()
		if n <= 0 {
			return false
		}
		if c.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one recycles the buffer. Each
// reference is released at most once.
func (c *chunk) release() {
	switch n := c.refs.Add(-1); {
	case n == 0:
		b := c.b
		c.b = nil
		if c.pooled {
			chunkBufs.put(b)
			if c.recycled != nil {
				c.recycled.Add(1)
			}
		}
	case n < 0:
		panic("coldread: chunk released more often than acquired")
	}
}

// size is the memory the chunk holds, for the cache's bound.
func (c *chunk) size() int64 { return int64(cap(c.b)) }

// chunkBufs recycles whole-chunk buffers across Readers. It is a sync.Pool
// per chunk size (Config.ChunkBytes), so idle buffers go back to the GC
// after two collections.
var chunkBufs bufPool

type bufPool struct {
	mu    sync.Mutex
	pools map[int]*sync.Pool
}

func (p *bufPool) pool(size int) *sync.Pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pools == nil {
		p.pools = map[int]*sync.Pool{}
	}
	sp, ok := p.pools[size]
	if !ok {
		sp = &sync.Pool{}
		p.pools[size] = sp
	}
	return sp
}

// get returns a buffer of size bytes, recycled when one is free (its bytes
// are then not zeroed).
func (p *bufPool) get(size int) []byte {
	if v, ok := p.pool(size).Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, size)
}

// put hands b, a buffer from get (or a slice of one from its start), back
// for reuse.
func (p *bufPool) put(b []byte) {
	b = b[:cap(b)]
	p.pool(len(b)).Put(&b)
}
