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
	// onEvict, when set, is called (with the lock held) for each value
	// that leaves the cache: evicted, replaced or cleared. A value too
	// large to be kept never entered, and is not passed.
	onEvict func(V)

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
		e := el.Value.(*lruEntry[K, V])
		c.mu.bytes -= e.size
		c.mu.order.Remove(el)
		c.evictedLocked(e.val)
	}
	c.mu.entries[key] = c.mu.order.PushFront(&lruEntry[K, V]{key: key, val: val, size: size})
	c.mu.bytes += size
	for c.mu.bytes > c.capacity {
		el := c.mu.order.Back()
		e := el.Value.(*lruEntry[K, V])
		c.mu.order.Remove(el)
		delete(c.mu.entries, e.key)
		c.mu.bytes -= e.size
		c.evictedLocked(e.val)
	}
}

// evictedLocked passes a value that left the cache to onEvict.
// REQUIRES: c.mu held.
func (c *lru[K, V]) evictedLocked(v V) {
	if c.onEvict != nil {
		c.onEvict(v)
	}
}

// clear removes every cached value (loads in flight still complete and
// are cached).
func (c *lru[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.mu.order.Front(); el != nil; el = el.Next() {
		c.evictedLocked(el.Value.(*lruEntry[K, V]).val)
	}
	c.mu.entries = map[K]*list.Element{}
	c.mu.order.Init()
	c.mu.bytes = 0
}

// chunkKey names one aligned chunk of one object.
type chunkKey struct {
	object string
	index  int64
}

// ChunkCache is an LRU of byte slices bounded by their summed length (the
// Reader's own chunk cache holds counted chunks: newChunkLRU).
type ChunkCache = lru[chunkKey, []byte]

// NewChunkCache returns a cache of byte slices holding at most capacity
// bytes.
func NewChunkCache(capacity int64) *ChunkCache {
	return newLRU[chunkKey](capacity, func(b []byte) int64 { return int64(len(b)) })
}

// newChunkLRU returns the Reader's chunk cache: at most capacity bytes of
// chunk memory, dropping its reference to each chunk that leaves.
func newChunkLRU(capacity int64) *lru[chunkKey, *chunk] {
	c := newLRU[chunkKey](capacity, (*chunk).size)
	c.onEvict = (*chunk).release
	return c
}
