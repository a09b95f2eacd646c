package coldread

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestChunkCacheEvictsLeastRecentlyUsedByBytes(t *testing.T) {
	c := NewChunkCache(10)
	ctx := context.Background()
	get := func(k string, size int) {
		t.Helper()
		if _, err := c.Get(ctx, chunkKey{k, 0}, func() ([]byte, error) { return make([]byte, size), nil }); err != nil {
			t.Fatal(err)
		}
	}
	get("a", 4)
	get("b", 4)
	get("a", 4) // a is now the most recent
	get("c", 4) // 12 bytes > 10: b goes
	if !c.Contains(chunkKey{"a", 0}) || c.Contains(chunkKey{"b", 0}) || !c.Contains(chunkKey{"c", 0}) {
		t.Fatalf("after eviction: a %v b %v c %v, want a and c", c.Contains(chunkKey{"a", 0}), c.Contains(chunkKey{"b", 0}), c.Contains(chunkKey{"c", 0}))
	}
	if c.Bytes() != 8 || c.Len() != 2 {
		t.Fatalf("cache holds %d bytes in %d chunks, want 8 in 2", c.Bytes(), c.Len())
	}
	if h, m := c.hits.Load(), c.misses.Load(); h != 1 || m != 3 {
		t.Fatalf("hits %d misses %d, want 1 and 3", h, m)
	}
	// A value larger than the capacity is returned but not kept, and evicts nothing.
	b, err := c.Get(ctx, chunkKey{"huge", 0}, func() ([]byte, error) { return make([]byte, 11), nil })
	if err != nil || len(b) != 11 {
		t.Fatalf("huge: %d bytes, %v", len(b), err)
	}
	if c.Contains(chunkKey{"huge", 0}) || c.Len() != 2 {
		t.Fatalf("huge value kept (len %d)", c.Len())
	}
}

func TestChunkCacheOneLoadPerKey(t *testing.T) {
	c := NewChunkCache(1 << 20)
	release := make(chan struct{})
	var loads atomic.Int32
	load := func() ([]byte, error) {
		loads.Add(1)
		<-release
		return []byte("chunk"), nil
	}
	const n = 8
	var wg sync.WaitGroup
	results := make([][]byte, n)
	started := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			b, err := c.Get(context.Background(), chunkKey{"k", 1}, load)
			if err != nil {
				t.Error(err)
			}
			results[i] = b
		}()
	}
	for range n {
		<-started
	}
	// Every goroutine is at or past the start line; the first one's load is
	// blocked, so the others either wait on it or have not called Get yet.
	// Releasing lets all finish; only one load may have run.
	close(release)
	wg.Wait()
	if loads.Load() != 1 {
		t.Fatalf("%d loads for one key, want 1", loads.Load())
	}
	for i, b := range results {
		if string(b) != "chunk" {
			t.Fatalf("caller %d got %q", i, b)
		}
	}
}

func TestChunkCacheFailedLoadIsNotCached(t *testing.T) {
	c := NewChunkCache(1 << 20)
	boom := errors.New("boom")
	if _, err := c.Get(context.Background(), chunkKey{"k", 0}, func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if c.Contains(chunkKey{"k", 0}) {
		t.Fatal("a failed load was cached")
	}
	b, err := c.Get(context.Background(), chunkKey{"k", 0}, func() ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(b) != "ok" {
		t.Fatalf("retry: %q %v", b, err)
	}
}

func TestChunkCacheWaiterHonoursItsContext(t *testing.T) {
	c := NewChunkCache(1 << 20)
	release, loading := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), chunkKey{"k", 0}, func() ([]byte, error) {
			close(loading)
			<-release
			return []byte("x"), nil
		})
		done <- err
	}()
	<-loading
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx, chunkKey{"k", 0}, func() ([]byte, error) { t.Error("second load"); return nil, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter with a cancelled context: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !c.Contains(chunkKey{"k", 0}) {
		t.Fatal("the load's result was not cached")
	}
}
