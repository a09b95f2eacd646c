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
	b    []byte // len: the bytes of the range; cap: the chunk size
	refs atomic.Int32
	// recycled counts buffers handed back for reuse (Stats).
	recycled *atomic.Int64
}

// newChunk returns a chunk over b holding one reference (the cache's).
func newChunk(b []byte, recycled *atomic.Int64) *chunk {
	c := &chunk{b: b, recycled: recycled}
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
		b := c.b[:0]
		c.b = nil
		chunkBufs.put(b)
		if c.recycled != nil {
			c.recycled.Add(1)
		}
	case n < 0:
		panic("coldread: chunk released more often than acquired")
	}
}

// size is the memory the chunk holds, for the cache's bound.
func (c *chunk) size() int64 { return int64(cap(c.b)) }

// chunkBufs recycles chunk buffers across Readers. It is a sync.Pool per
// buffer capacity, so idle buffers go back to the GC after two collections.
var chunkBufs bufPool

type bufPool struct {
	mu    sync.Mutex
	pools map[int]*sync.Pool
}

func (p *bufPool) pool(capacity int) *sync.Pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pools == nil {
		p.pools = map[int]*sync.Pool{}
	}
	sp, ok := p.pools[capacity]
	if !ok {
		sp = &sync.Pool{}
		p.pools[capacity] = sp
	}
	return sp
}

// get returns a buffer of length n and capacity capacity (>= n), recycled
// when one is free. Its bytes are not zeroed.
func (p *bufPool) get(n, capacity int) []byte {
	if v, ok := p.pool(capacity).Get().(*[]byte); ok {
		return (*v)[:n]
	}
	return make([]byte, n, capacity)
}

// put hands b (whose capacity names its pool) back for reuse.
func (p *bufPool) put(b []byte) {
	p.pool(cap(b)).Put(&b)
}
