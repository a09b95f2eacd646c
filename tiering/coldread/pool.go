package coldread

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed: the Reader was closed.
var ErrClosed = errors.New("coldread: reader closed")

// pool is a fixed set of worker goroutines running remote-I/O tasks from a
// bounded queue. The pool owns its workers: close cancels the context every
// task runs under and waits for them to return.
type pool struct {
	tasks  chan func(context.Context)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func newPool(workers, queue int) *pool {
	p := &pool{tasks: make(chan func(context.Context), queue)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case fn := <-p.tasks:
			fn(p.ctx)
		}
	}
}

// submit queues fn, waiting for room until ctx ends (its error) or the pool
// closes (ErrClosed). fn runs with the pool's context, not ctx. A task
// queued when the pool closes may never run.
func (p *pool) submit(ctx context.Context, fn func(context.Context)) error {
	if p.ctx.Err() != nil {
		return ErrClosed
	}
	select {
	case p.tasks <- fn:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.ctx.Done():
		return ErrClosed
	}
}

// trySubmit queues fn if there is room now.
func (p *pool) trySubmit(fn func(context.Context)) bool {
	if p.ctx.Err() != nil {
		return false
	}
	select {
	case p.tasks <- fn:
		return true
	default:
		return false
	}
}

// close stops the workers and waits for them. Idempotent.
func (p *pool) close() {
	p.once.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
}
