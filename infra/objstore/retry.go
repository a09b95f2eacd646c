package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// RetryConfig tunes WithRetries. Zero fields take the defaults shown.
type RetryConfig struct {
	// MaxAttempts counts the first try. Default 5.
	MaxAttempts int `yaml:"max_attempts"`
	// BaseDelay is the backoff before the second attempt; it doubles each
	// retry, and each wait is drawn uniformly from [d/2, d). Default 100ms.
	BaseDelay time.Duration `yaml:"base_delay"`
	// MaxDelay caps the backoff. Default 5s.
	MaxDelay time.Duration `yaml:"max_delay"`
	// PerAttemptTimeout bounds one attempt; an attempt that runs out is
	// retried. For GetRange it covers the request up to the response, not
	// the reading of the body. 0 means no bound beyond the caller's context.
	PerAttemptTimeout time.Duration `yaml:"per_attempt_timeout"`
}

// Defaults fills unset fields.
func (c *RetryConfig) Defaults() {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = 100 * time.Millisecond
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 5 * time.Second
	}
}

// WithRetries wraps b so that each operation is retried, with jittered
// exponential backoff, while its error IsRetryable or its attempt ran out of
// PerAttemptTimeout, up to MaxAttempts. ErrNotFound, invalid keys and ranges,
// other 4xx answers and the caller's own cancellation are returned at once.
//
// Put is retried only when its reader is an io.Seeker (*os.File,
// *io.SectionReader, *bytes.Reader: what Shale's uploads pass): before each
// retry the reader is sought back to where the first attempt started. Any
// other reader gets a single attempt. GetRange retries the opening of the
// object; an error while reading the returned body is the caller's to see.
// List retries only a listing that failed before fn was first called, so fn
// never sees a key twice.
func WithRetries(b Bucket, cfg RetryConfig) Bucket {
	cfg.Defaults()
	return &retrying{b: b, cfg: cfg}
}

type retrying struct {
	b   Bucket
	cfg RetryConfig
}

// do runs op until it succeeds, fails for good or attempts run out.
// op gets an attempt context; keep reports whether op's result outlives the
// attempt (GetRange's body), in which case do hands the attempt's cancel to
// the caller through the returned function instead of calling it.
func (r *retrying) do(ctx context.Context, op func(ctx context.Context, attempt int) (keep bool, err error)) (release func(), err error) {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithCancel(ctx)
		var timedOut atomic.Bool
		var timer *time.Timer
		if r.cfg.PerAttemptTimeout > 0 {
			timer = time.AfterFunc(r.cfg.PerAttemptTimeout, func() { timedOut.Store(true); cancel() })
		}
		keep, err := op(actx, attempt)
		if timer != nil {
			timer.Stop()
		}
		if err == nil && (!keep || !timedOut.Load()) {
			if keep {
				return cancel, nil
			}
			cancel()
			return func() {}, nil
		}
		cancel()
		if err == nil { // the attempt ran out just as GetRange returned a body
			err = fmt.Errorf("%w: attempt timed out after %v", ErrTransient, r.cfg.PerAttemptTimeout)
		}
		var nr errNoRetry
		if errors.As(err, &nr) {
			return nil, nr.err
		}
		retryable := IsRetryable(err) || (timedOut.Load() && ctx.Err() == nil)
		if !retryable || attempt >= r.cfg.MaxAttempts || ctx.Err() != nil {
			if retryable && attempt >= r.cfg.MaxAttempts {
				err = fmt.Errorf("objstore: gave up after %d attempts: %w", attempt, err)
			}
			return nil, err
		}
		if err := sleepCtx(ctx, r.backoff(attempt)); err != nil {
			return nil, err
		}
	}
}

// backoff returns the wait after the given failed attempt (1-based).
func (r *retrying) backoff(attempt int) time.Duration {
	d := r.cfg.BaseDelay
	for i := 1; i < attempt && d < r.cfg.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.cfg.MaxDelay)
	half := d / 2
	return half + rand.N(d-half+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *retrying) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	seeker, canRewind := body.(io.Seeker)
	var start int64
	if canRewind {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			canRewind = false
		}
	}
	_, err := r.do(ctx, func(ctx context.Context, attempt int) (bool, error) {
		if attempt > 1 { // only reached when canRewind
			if _, err := seeker.Seek(start, io.SeekStart); err != nil {
				return false, fmt.Errorf("objstore: rewind put body: %w", err)
			}
		}
		err := r.b.Put(ctx, key, body, size)
		if err != nil && !canRewind {
			return false, errNoRetry{err}
		}
		return false, err
	})
	return err
}

// errNoRetry makes do return err at once, whatever it is.
type errNoRetry struct{ err error }

func (e errNoRetry) Error() string { return e.err.Error() }

func (r *retrying) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	release, err := r.do(ctx, func(ctx context.Context, _ int) (bool, error) {
		if rc != nil { // an earlier attempt's body, abandoned
			rc.Close()
		}
		var err error
		rc, err = r.b.GetRange(ctx, key, offset, length)
		return err == nil, err
	})
	if err != nil {
		if rc != nil {
			rc.Close()
		}
		return nil, err
	}
	return &releasingReader{ReadCloser: rc, release: release}, nil
}

// releasingReader cancels the attempt context that produced its body once
// the caller closes it.
type releasingReader struct {
	io.ReadCloser
	release func()
}

func (r *releasingReader) Close() error {
	err := r.ReadCloser.Close()
	r.release()
	return err
}

func (r *retrying) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	_, err := r.do(ctx, func(ctx context.Context, _ int) (bool, error) {
		called := false
		err := r.b.List(ctx, prefix, func(a Attrs) error { called = true; return fn(a) })
		if err != nil && called {
			return false, errNoRetry{err}
		}
		return false, err
	})
	return err
}

func (r *retrying) Stat(ctx context.Context, key string) (Attrs, error) {
	var a Attrs
	_, err := r.do(ctx, func(ctx context.Context, _ int) (bool, error) {
		var err error
		a, err = r.b.Stat(ctx, key)
		return false, err
	})
	return a, err
}

func (r *retrying) Delete(ctx context.Context, key string) error {
	_, err := r.do(ctx, func(ctx context.Context, _ int) (bool, error) {
		return false, r.b.Delete(ctx, key)
	})
	return err
}

func (r *retrying) Close() error { return r.b.Close() }
