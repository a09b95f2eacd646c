package coldread

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
)

// lru is a cache bounded by the summed size of its values, evicting the
// least recently used, with one load per missing key: concurrent Gets of a
// key that is being loaded wait for that load instead of starting another.
// Safe for concurrent use. Values are shared: callers must not modify them.
type lru[K comparable, V any] struct {
	capacity int64
	sizeOf   func(V) int64

	hits, misses atomic.Int64

	mu struct {
		sync.Mutex
		entries map[K]*list.Element // of *lruEntry
		order   *list.List          // front: most recent
		bytes   int64
		loading map[K]*pendingLoad[V]
	}
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

type pendingLoad[V any] struct {
	done chan struct{}
	val  V
	err  error
}

func newLRU[K comparable, V any](capacity int64, sizeOf func(V) int64) *lru[K, V] {
	c := &lru[K, V]{capacity: capacity, sizeOf: sizeOf}
	c.mu.entries = map[K]*list.Element{}
	c.mu.order = list.New()
	c.mu.loading = map[K]*pendingLoad[V]{}
	return c
}

// Get returns the value cached under key, or calls load to produce it. Only
// the first caller for a missing key runs load (in its own goroutine, with
// its own context captured by load); others wait for it or for ctx. A failed
// load is not cached: every waiter gets the error, and the next Get loads
// again. A value larger than the whole capacity is returned but not kept.
func (c *lru[K, V]) Get(ctx context.Context, key K, load func() (V, error)) (V, error) {
	c.mu.Lock()
	if el, ok := c.mu.entries[key]; ok {
		c.mu.order.MoveToFront(el)
		v := el.Value.(*lruEntry[K, V]).val
		c.mu.Unlock()
		c.hits.Add(1)
		return v, nil
	}
	if p, ok := c.mu.loading[key]; ok {
		c.mu.Unlock()
		c.hits.Add(1) // served without a load of its own
		select {
		case <-p.done:
			return p.val, p.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	p := &pendingLoad[V]{done: make(chan struct{})}
	c.mu.loading[key] = p
	c.mu.Unlock()
	c.misses.Add(1)

	p.val, p.err = load()
	c.mu.Lock()
	delete(c.mu.loading, key)
	if p.err == nil {
		c.addLocked(key, p.val)
	}
	c.mu.Unlock()
	close(p.done)
	return p.val, p.err
}

// Contains reports whether key is cached or being loaded, without touching
// the recency order or the counters.
func (c *lru[K, V]) Contains(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, cached := c.mu.entries[key]
	_, loading := c.mu.loading[key]
	return cached || loading
}

// peek returns the cached value under key, without loading, waiting or
// counting.
func (c *lru[K, V]) peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.mu.entries[key]; ok {
		return el.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Bytes is the summed size of the cached values.
func (c *lru[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.bytes
}

// Len is the number of cached values.
func (c *lru[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.entries)
}

// addLocked caches val under key and evicts from the back until the cache
// fits its capacity.
// REQUIRES: c.mu held.
func (c *lru[K, V]) addLocked(key K, val V) {
	size := c.sizeOf(val)
	if size > c.capacity {
		return
	}
	if el, ok := c.mu.entries[key]; ok {
		c.mu.bytes -= el.Value.(*lruEntry[K, V]).size
		c.mu.order.Remove(el)
	}
	c.mu.entries[key] = c.mu.order.PushFront(&lruEntry[K, V]{key: key, val: val, size: size})
	c.mu.bytes += size
	for c.mu.bytes > c.capacity {
		el := c.mu.order.Back()
		e := el.Value.(*lruEntry[K, V])
		c.mu.order.Remove(el)
		delete(c.mu.entries, e.key)
		c.mu.bytes -= e.size
	}
}

// chunkKey names one aligned chunk of one object.
type chunkKey struct {
	object string
	index  int64
}

// ChunkCache holds aligned chunks of remote .log objects, bounded by bytes.
type ChunkCache = lru[chunkKey, []byte]

// NewChunkCache returns a chunk cache holding at most capacity bytes.
func NewChunkCache(capacity int64) *ChunkCache {
	return newLRU[chunkKey](capacity, func(b []byte) int64 { return int64(len(b)) })
}
