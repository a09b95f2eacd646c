package objstore

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Operation names WithMetrics reports.
const (
	OpPut    = "put"
	OpGet    = "get"
	OpList   = "list"
	OpStat   = "stat"
	OpDelete = "delete"
)

// MetricsSink receives one observation per Bucket operation. Implementations
// must be safe for concurrent use and quick: they run inline.
type MetricsSink interface {
	// Observe reports an operation (one of the Op constants), the payload
	// bytes it moved, how long it took and its error (nil on success).
	Observe(op string, bytes int64, dur time.Duration, err error)
}

// WithMetrics wraps b so that every operation is reported to m:
//   - put: the declared size, the call's duration and error;
//   - get: reported when the returned reader is closed (or when GetRange
//     fails), with the bytes actually read, the time from the call to
//     Close, and the first read error other than io.EOF;
//   - list, stat, delete: zero bytes.
//
// Wrap it inside WithRetries (WithRetries(WithMetrics(b, m), cfg)) to see
// every attempt, outside to see each call once.
func WithMetrics(b Bucket, m MetricsSink) Bucket { return &metered{b: b, m: m} }

type metered struct {
	b Bucket
	m MetricsSink
}

func (w *metered) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	start := time.Now()
	err := w.b.Put(ctx, key, r, size)
	w.m.Observe(OpPut, size, time.Since(start), err)
	return err
}

func (w *metered) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := w.b.GetRange(ctx, key, offset, length)
	if err != nil {
		w.m.Observe(OpGet, 0, time.Since(start), err)
		return nil, err
	}
	return &meteredReader{rc: rc, m: w.m, start: start}, nil
}

// meteredReader counts what is read and reports once, on the first Close.
type meteredReader struct {
	rc    io.ReadCloser
	m     MetricsSink
	start time.Time
	n     int64
	err   error
	once  sync.Once
}

func (r *meteredReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *meteredReader) Close() error {
	err := r.rc.Close()
	r.once.Do(func() { r.m.Observe(OpGet, r.n, time.Since(r.start), r.err) })
	return err
}

func (w *metered) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	start := time.Now()
	err := w.b.List(ctx, prefix, fn)
	w.m.Observe(OpList, 0, time.Since(start), err)
	return err
}

func (w *metered) Stat(ctx context.Context, key string) (Attrs, error) {
	start := time.Now()
	a, err := w.b.Stat(ctx, key)
	w.m.Observe(OpStat, 0, time.Since(start), err)
	return a, err
}

func (w *metered) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := w.b.Delete(ctx, key)
	w.m.Observe(OpDelete, 0, time.Since(start), err)
	return err
}

func (w *metered) Close() error { return w.b.Close() }

// OpStats are the totals of one operation.
type OpStats struct {
	Requests int64
	Errors   int64
	// NotFound counts errors that were ErrNotFound (also in Errors).
	NotFound int64
	Bytes    int64
	Latency  time.Duration // summed
}

// Counters is an in-memory MetricsSink keeping totals per operation, for
// tests and for exporting through a metrics registry. The zero value is
// ready; it is safe for concurrent use.
type Counters struct {
	mu  sync.Mutex
	ops map[string]OpStats
}

// Observe implements MetricsSink.
func (c *Counters) Observe(op string, bytes int64, dur time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = make(map[string]OpStats)
	}
	s := c.ops[op]
	s.Requests++
	s.Bytes += bytes
	s.Latency += dur
	if err != nil {
		s.Errors++
		if errors.Is(err, ErrNotFound) {
			s.NotFound++
		}
	}
	c.ops[op] = s
}

// Snapshot returns a copy of the totals; the caller owns the map.
func (c *Counters) Snapshot() map[string]OpStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]OpStats, len(c.ops))
	for k, v := range c.ops {
		out[k] = v
	}
	return out
}
