package controlplane

import (
	"context"
	"sync"
)

// eventBus delivers events to subscribers from one goroutine, in the order
// the cache applied the changes. The queue is unbounded: publishing never
// blocks the cache, so a slow subscriber delays only other subscribers.
type eventBus struct {
	mu struct {
		sync.Mutex
		queue  []Event
		subs   map[uint64]func(Event)
		nextID uint64
	}
	wake chan struct{} // capacity 1: "the queue may be non-empty"
}

func newEventBus() *eventBus {
	b := &eventBus{wake: make(chan struct{}, 1)}
	b.mu.subs = map[uint64]func(Event){}
	return b
}

// publish queues events. Safe to call with other locks held.
func (b *eventBus) publish(evs ...Event) {
	if len(evs) == 0 {
		return
	}
	b.mu.Lock()
	if len(b.mu.subs) > 0 {
		b.mu.queue = append(b.mu.queue, evs...)
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *eventBus) subscribe(fn func(Event)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.mu.nextID
	b.mu.nextID++
	b.mu.subs[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.mu.subs, id)
		b.mu.Unlock()
	}
}

// run delivers queued events until ctx is done.
func (b *eventBus) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		for {
			b.mu.Lock()
			if len(b.mu.queue) == 0 {
				b.mu.Unlock()
				break
			}
			ev := b.mu.queue[0]
			b.mu.queue[0] = Event{}
			b.mu.queue = b.mu.queue[1:]
			subs := make([]func(Event), 0, len(b.mu.subs))
			for _, fn := range b.mu.subs {
				subs = append(subs, fn)
			}
			b.mu.Unlock()
			for _, fn := range subs {
				fn(ev.clone())
			}
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func (e Event) clone() Event {
	e.Topic = e.Topic.clone()
	e.Partition = e.Partition.clone()
	return e
}
