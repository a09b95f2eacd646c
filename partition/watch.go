package partition

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Watcher collects which partitions changed, for one incremental fetch
// session (KIP-227) on the leader: a session reads again only the
// partitions its Watcher names, and its long poll waits on the Watcher's
// one channel instead of one channel per partition. A Replica marks every
// Watcher registered with it (Replica.Watch) whenever something a Fetch
// answer depends on moves: its log end (an append), its high watermark,
// last stable offset, log start (local or remote), leader role or epoch,
// assignment or ISR, topic config, or its closing.
//
// A Watcher also carries its session's fetch clock (Fetched, LastFetch):
// a follower's partition that is caught up and idle is not visited by the
// session's fetches, and the leader counts it caught up at each of them
// (followerState.caughtUp), as Kafka's would at each fetch that named it.
//
// Its methods are safe for concurrent use. Lock order: a Replica's mu,
// then its watch list's, then a Watcher's; a Watcher's lock is a leaf.
type Watcher struct {
	mu    sync.Mutex
	dirty map[*Replica]struct{} // REQUIRES: mu held
	ch    chan struct{}         // one pending wake

	lastFetch atomic.Int64 // Unix nanoseconds of the session's latest fetch; 0 before any
}

// NewWatcher returns a Watcher with nothing marked.
func NewWatcher() *Watcher {
	return &Watcher{dirty: map[*Replica]struct{}{}, ch: make(chan struct{}, 1)}
}

// C returns a channel that receives once after a replica is marked, until
// Take drains it.
func (w *Watcher) C() <-chan struct{} { return w.ch }

// Take returns the replicas marked since the last Take, and forgets them.
// The caller owns the slice.
func (w *Watcher) Take() []*Replica {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.ch:
	default:
	}
	if len(w.dirty) == 0 {
		return nil
	}
	out := make([]*Replica, 0, len(w.dirty))
	for r := range w.dirty {
		out = append(out, r)
	}
	clear(w.dirty)
	return out
}

// Pending reports how many replicas are marked now.
func (w *Watcher) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirty)
}

func (w *Watcher) mark(r *Replica) {
	w.mu.Lock()
	w.dirty[r] = struct{}{}
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Fetched records that the session fetched at now (before it reads any
// partition for that fetch).
func (w *Watcher) Fetched(now time.Time) {
	w.lastFetch.Store(now.UnixNano())
}

// LastFetch is the time given to the latest Fetched, zero before any.
func (w *Watcher) LastFetch() time.Time {
	n := w.lastFetch.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// watchers is a Replica's list of registered Watchers.
type watchers struct {
	sync.Mutex
	ws []*Watcher
}

// Watch registers w: every later change of the replica marks it. Calling
// it again with the same w does nothing. A fetch registers before it reads
// the replica, so that no change after its read goes unmarked.
func (r *Replica) Watch(w *Watcher) {
	r.watch.Lock()
	defer r.watch.Unlock()
	if !slices.Contains(r.watch.ws, w) {
		r.watch.ws = append(r.watch.ws, w)
	}
}

// Unwatch removes w, if registered.
func (r *Replica) Unwatch(w *Watcher) {
	r.watch.Lock()
	defer r.watch.Unlock()
	if i := slices.Index(r.watch.ws, w); i >= 0 {
		r.watch.ws = slices.Delete(r.watch.ws, i, i+1)
	}
}

// Watchers is the number of Watchers registered (tests).
func (r *Replica) Watchers() int {
	r.watch.Lock()
	defer r.watch.Unlock()
	return len(r.watch.ws)
}

// notifyWatchers marks every registered Watcher. It may be called with
// r.mu held or not.
func (r *Replica) notifyWatchers() {
	r.watch.Lock()
	defer r.watch.Unlock()
	for _, w := range r.watch.ws {
		w.mark(r)
	}
}
