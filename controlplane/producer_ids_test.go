package controlplane

import (
	"sync"
	"testing"
)

// Two allocators (two nodes) drawing concurrently past several block
// boundaries, then a third opened later (a restarted node), never hand out
// one id twice; each allocator's ids within a block are consecutive.
func TestProducerIDsUniqueAcrossNodesAndRestarts(t *testing.T) {
	s := startNATS(t)
	ctx := testCtx(t)
	open := func() *ProducerIDs {
		t.Helper()
		p, err := OpenProducerIDs(ctx, connect(t, s), 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := open(), open()

	const perNode = 2*producerIDBlock + 10 // crosses two block boundaries each
	var mu sync.Mutex
	seen := make(map[int64]bool)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, p := range []*ProducerIDs{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := int64(-1)
			for i := 0; i < perNode; i++ {
				id, err := p.NextProducerID(ctx)
				if err != nil {
					errs <- err
					return
				}
				if prev >= 0 && id != prev+1 && id%producerIDBlock != 0 {
					t.Errorf("id %d after %d is neither the next in its block nor a block start", id, prev)
				}
				prev = id
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	c := open()
	id, err := c.NextProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if seen[id] {
		t.Fatalf("a new allocator handed out %d, already used before it opened", id)
	}
	// 2*perNode ids from two allocators use at most 2*3 blocks; the next
	// allocator starts past every one of them.
	var maxSeen int64
	for id := range seen {
		maxSeen = max(maxSeen, id)
	}
	if id <= maxSeen || id%producerIDBlock != 0 {
		t.Fatalf("restarted allocator's first id %d: want a fresh block start above %d", id, maxSeen)
	}
}
