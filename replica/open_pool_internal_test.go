package replica

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForEachBounded: every item is handled once, limit calls run at the
// same time (the first limit calls wait for each other, so a serial loop
// would never get past the first), and never more than limit.
func TestForEachBounded(t *testing.T) {
	const items, limit = 50, 8
	var (
		in, most atomic.Int32
		seen     sync.Map
		arrived  sync.WaitGroup
	)
	arrived.Add(limit)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var first atomic.Int32
	list := make([]int, items)
	for i := range list {
		list[i] = i
	}
	forEachBounded(list, limit, func(i int) {
		now := in.Add(1)
		defer in.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		if _, dup := seen.LoadOrStore(i, true); dup {
			t.Errorf("item %d handled twice", i)
		}
		if first.Add(1) <= limit {
			arrived.Done()
			select {
			case <-all:
			case <-time.After(30 * time.Second):
				t.Errorf("the first %d calls never ran together", limit)
			}
		}
	})
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	if n != items || most.Load() != limit {
		t.Fatalf("%d items handled, at most %d at once; want %d, %d", n, most.Load(), items, limit)
	}
}
