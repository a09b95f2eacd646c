package group

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// runner owns one group: its goroutine is the only one that touches g.
// Others submit closures. The runner stops when its shard is unloaded, the
// coordinator closes, or the group dies (DeleteGroups).
type runner struct {
	g      *group
	shard  *shard
	events chan func(*group)
	stop   chan struct{} // closed to ask the loop to end
	done   chan struct{} // closed when the loop has ended
	once   sync.Once
	// stat is what the metrics read of g (publish): written by the
	// group's goroutine, read by Coordinator.Figures.
	stat atomic.Uint64
}

// startRunnerLocked starts g's goroutine in sh. REQUIRES: sh.mu held.
func (c *Coordinator) startRunnerLocked(sh *shard, g *group) *runner {
	r := &runner{g: g, shard: sh, events: make(chan func(*group), 16), stop: make(chan struct{}), done: make(chan struct{})}
	g.persist = func(recs []record) (int64, error) { return c.append(sh, recs) }
	g.persistTxn = func(p txnProducer, recs []record) (int64, error) { return c.appendTxn(sh, p, recs) }
	g.counters = &c.counters
	r.publish()
	sh.mu.groups[g.id] = r
	if !c.rt.Go(func() { c.run(r) }) {
		close(r.done) // the coordinator is closing: the group never runs
	}
	return r
}

func (r *runner) stopOnce() { r.once.Do(func() { close(r.stop) }) }

// submit queues fn; false when the runner has ended or ctx ended first.
func (r *runner) submit(ctx context.Context, fn func(*group)) bool {
	select {
	case r.events <- fn:
		return true
	case <-r.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// run is the group's loop: events and timers, each applied with the time
// read once.
func (c *Coordinator) run(r *runner) {
	defer close(r.done)
	g := r.g
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		if next := g.nextDeadline(); !next.IsZero() {
			wait = max(next.Sub(c.cfg.Now()), 0)
		}
		timer.Reset(wait)
		select {
		case fn := <-r.events:
			g.now = c.cfg.Now()
			fn(g)
		case <-timer.C:
			g.now = c.cfg.Now()
			g.tick()
		case <-r.stop:
			g.now = c.cfg.Now()
			g.shutdown()
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		r.publish()
		if g.phantom() {
			g.setState(StateDead) // created by a request that left nothing behind
		}
		if g.state == StateDead {
			c.forget(r.shard, r)
			g.shutdown()
			return
		}
	}
}

// phantom: the group was created by a request that was then refused (a
// bad join, a rejected commit): no member, no member id handed out, no
// offset, never a generation. It has nothing in __consumer_offsets and is
// dropped, as if never created.
func (g *group) phantom() bool {
	return g.state == StateEmpty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && len(g.unreplicated) == 0 && len(g.pendingTxn) == 0 && g.consumer == nil && len(g.share) == 0
}
