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
	// acquire, when set, is called with the lock held on every value Get
	// returns, before any other Get can evict it: a counted chunk takes its
	// caller's reference there, so that a value is never recycled between
	// the lookup and the caller's hold. It must succeed on a cached value.
	acquire func(V) bool

	hits, misses atomic.Int64

	mu struct {
		sync.Mutex
		entries map[K]*list.Element // of *lruEntry
		order   *list.List          // front: most recent
		bytes   int64
		loading map[K]*pendingLoad[V]
		// reserved: keys a read-ahead task was queued for (reserve) and
		// that no Get has loaded since.
		reserved map[K]struct{}
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
	c.mu.reserved = map[K]struct{}{}
	return c
}

// Get returns the value cached under key, or calls load to produce it. Only
// the first caller for a missing key runs load (in its own goroutine, with
// its own context captured by load); others wait for it or for ctx. A failed
// load is not cached: every waiter gets the error, and the next Get loads
// again. A value larger than the whole capacity is returned but not kept.
// A load clears the key's reservation (reserve).
func (c *lru[K, V]) Get(ctx context.Context, key K, load func() (V, error)) (V, error) {
	v, _, err := c.get(ctx, key, load, false)
	return v, err
}

// reserve marks key as wanted by a task that will call getReserved later,
// unless it is cached, being loaded or reserved already (then it returns
// false). A read-ahead queued behind a reader that has since loaded the key
// itself then knows that it came too late.
func (c *lru[K, V]) reserve(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, cached := c.mu.entries[key]
	_, loading := c.mu.loading[key]
	_, reserved := c.mu.reserved[key]
	if cached || loading || reserved {
		return false
	}
	c.mu.reserved[key] = struct{}{}
	return true
}

// unreserve drops key's reservation (its task was never queued).
func (c *lru[K, V]) unreserve(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.reserved, key)
}

// getReserved is Get for a key reserved by reserve, as long as the
// reservation stands, that is as long as no Get has loaded the key since:
// then ok is true and the results are Get's. Otherwise it does nothing and
// returns ok false. The reservation is gone either way.
func (c *lru[K, V]) getReserved(ctx context.Context, key K, load func() (V, error)) (v V, ok bool, err error) {
	return c.get(ctx, key, load, true)
}

// get is Get, or getReserved when reserved is set.
func (c *lru[K, V]) get(ctx context.Context, key K, load func() (V, error), reserved bool) (V, bool, error) {
	var zero V
	counted := false // a wait for another's load counted as a hit
	for {
		c.mu.Lock()
		if reserved {
			if _, ok := c.mu.reserved[key]; !ok {
				c.mu.Unlock()
				return zero, false, nil
			}
			delete(c.mu.reserved, key)
			reserved = false
		}
		if el, ok := c.mu.entries[key]; ok {
			c.mu.order.MoveToFront(el)
			v := el.Value.(*lruEntry[K, V]).val
			if c.acquire != nil && !c.acquire(v) {
				c.mu.Unlock()
				panic("coldread: a cached value could not be acquired")
			}
			c.mu.Unlock()
			if !counted {
				c.hits.Add(1)
			}
			return v, true, nil
		}
		if p, ok := c.mu.loading[key]; ok {
			c.mu.Unlock()
			if !counted {
				c.hits.Add(1) // served without a load of its own
				counted = true
			}
			select {
			case <-p.done:
				if p.err != nil || c.acquire == nil {
					return p.val, true, p.err
				}
				// Take the reference under the lock: look again (if the
				// value left the cache meanwhile, this loads it anew).
				continue
			case <-ctx.Done():
				return zero, true, ctx.Err()
			}
		}
		p := &pendingLoad[V]{done: make(chan struct{})}
		c.mu.loading[key] = p
		delete(c.mu.reserved, key)
		c.mu.Unlock()
		c.misses.Add(1)

		p.val, p.err = load()
		c.mu.Lock()
		delete(c.mu.loading, key)
		if p.err == nil {
			if c.acquire != nil && !c.acquire(p.val) {
				c.mu.Unlock()
				panic("coldread: a loaded value could not be acquired")
			}
			c.addLocked(key, p.val)
		}
		c.mu.Unlock()
		close(p.done)
		return p.val, true, p.err
	}
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
// chunk memory, dropping its reference to each chunk that leaves, and
// taking one for the caller on each chunk Get returns.
func newChunkLRU(capacity int64) *lru[chunkKey, *chunk] {
	c := newLRU[chunkKey](capacity, (*chunk).size)
	c.onEvict = (*chunk).release
	c.acquire = (*chunk).acquire
	return c
}
