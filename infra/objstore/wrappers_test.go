package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
)

func newFS(t *testing.T) *fsbucket.Bucket {
	b, err := fsbucket.New(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The wrappers keep the Bucket contract: the acceptance suite passes through
// them.
func TestAcceptanceThroughWrappers(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
		b := objstore.WithMetrics(newFS(t), &objstore.Counters{})
		b = objstore.WithRetries(b, objstore.RetryConfig{BaseDelay: time.Millisecond})
		return objstore.WithPrefix(b, "tenant/a")
	})
}

func TestPrefixStoresUnderPrefix(t *testing.T) {
	ctx := context.Background()
	fs := newFS(t)
	b := objstore.WithPrefix(fs, "p/q/")
	if err := b.Put(ctx, "k/1", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := fs.Put(ctx, "p/qq", strings.NewReader("y"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(ctx, "p/q/k/1"); err != nil {
		t.Errorf("underlying key: %v", err)
	}
	var keys []string
	if err := b.List(ctx, "", func(a objstore.Attrs) error { keys = append(keys, a.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"k/1"}) {
		t.Errorf("List: %q", keys)
	}
	if a, err := b.Stat(ctx, "k/1"); err != nil || a.Key != "k/1" {
		t.Errorf("Stat: %+v %v", a, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("WithPrefix with an invalid prefix did not panic")
		}
	}()
	objstore.WithPrefix(fs, "/abs")
}

// flaky fails the first failures calls of each operation with err, after
// (for Put) consuming part of the body, as a dropped upload would.
type flaky struct {
	objstore.Bucket
	mu       sync.Mutex
	failures int
	err      error
	calls    map[string]int
	block    bool // block until ctx is done instead of failing
}

func (f *flaky) fail(ctx context.Context, op string) error {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
	n := f.calls[op]
	f.mu.Unlock()
	if n > f.failures {
		return nil
	}
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.err
}

func (f *flaky) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := f.fail(ctx, "put"); err != nil {
		_, _ = io.CopyN(io.Discard, r, size/2)
		return err
	}
	return f.Bucket.Put(ctx, key, r, size)
}

func (f *flaky) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := f.fail(ctx, "get"); err != nil {
		return nil, err
	}
	return f.Bucket.GetRange(ctx, key, off, n)
}

func (f *flaky) Stat(ctx context.Context, key string) (objstore.Attrs, error) {
	if err := f.fail(ctx, "stat"); err != nil {
		return objstore.Attrs{}, err
	}
	return f.Bucket.Stat(ctx, key)
}

func (f *flaky) List(ctx context.Context, prefix string, fn func(objstore.Attrs) error) error {
	if err := f.fail(ctx, "list"); err != nil {
		return err
	}
	return f.Bucket.List(ctx, prefix, fn)
}

var errTransient503 = fmt.Errorf("503 SlowDown: %w", objstore.ErrTransient)

func fastRetries() objstore.RetryConfig {
	return objstore.RetryConfig{MaxAttempts: 4, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond}
}

func TestRetriesTransient(t *testing.T) {
	ctx := context.Background()
	f := &flaky{Bucket: newFS(t), failures: 3, err: errTransient503}
	c := &objstore.Counters{}
	b := objstore.WithRetries(objstore.WithMetrics(f, c), fastRetries())
	body := objstoretest.Body("retry", 10_000)
	if err := b.Put(ctx, "k", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatalf("Put: %v", err)
	}
	rc, err := b.GetRange(ctx, "k", 0, -1)
	if err != nil {
		t.Fatalf("GetRange: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes, %v: want the whole body (rewound after partial reads)", len(got), err)
	}
	if _, err := b.Stat(ctx, "k"); err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if err := b.List(ctx, "", func(objstore.Attrs) error { return nil }); err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, op := range []string{"put", "get", "stat", "list"} {
		if f.calls[op] != 4 {
			t.Errorf("%s: %d calls, want 4", op, f.calls[op])
		}
	}
	s := c.Snapshot()
	if s[objstore.OpPut].Requests != 4 || s[objstore.OpPut].Errors != 3 {
		t.Errorf("put metrics %+v, want 4 requests, 3 errors", s[objstore.OpPut])
	}
	if s[objstore.OpGet].Errors != 3 || s[objstore.OpGet].Bytes != int64(len(body)) {
		t.Errorf("get metrics %+v, want 3 errors and %d bytes", s[objstore.OpGet], len(body))
	}
}

func TestRetriesGiveUp(t *testing.T) {
	f := &flaky{Bucket: newFS(t), failures: 100, err: errTransient503}
	b := objstore.WithRetries(f, fastRetries())
	_, err := b.Stat(context.Background(), "k")
	if !errors.Is(err, objstore.ErrTransient) || f.calls["stat"] != 4 {
		t.Errorf("err %v after %d calls, want ErrTransient after 4", err, f.calls["stat"])
	}
}

func TestNoRetryOnPermanentErrors(t *testing.T) {
	ctx := context.Background()
	for _, perm := range []error{objstore.ErrNotFound, errors.New("403 AccessDenied"), fmt.Errorf("%w: %w", objstore.ErrTransient, objstore.ErrInvalidRange)} {
		f := &flaky{Bucket: newFS(t), failures: 1, err: perm}
		_, err := objstore.WithRetries(f, fastRetries()).Stat(ctx, "k")
		if !errors.Is(err, perm) || f.calls["stat"] != 1 {
			t.Errorf("%v: err %v after %d calls, want 1 call", perm, err, f.calls["stat"])
		}
	}
	// A Put body that cannot be rewound gets one attempt.
	f := &flaky{Bucket: newFS(t), failures: 1, err: errTransient503}
	err := objstore.WithRetries(f, fastRetries()).Put(ctx, "k", io.LimitReader(strings.NewReader("abcd"), 4), 4)
	if !errors.Is(err, objstore.ErrTransient) || f.calls["put"] != 1 {
		t.Errorf("unseekable Put: %v after %d calls, want 1 call", err, f.calls["put"])
	}
	// The caller's cancellation stops retrying.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f = &flaky{Bucket: newFS(t), failures: 10, err: errTransient503}
	if _, err := objstore.WithRetries(f, fastRetries()).Stat(cctx, "k"); err == nil || f.calls["stat"] != 1 {
		t.Errorf("canceled: %v after %d calls", err, f.calls["stat"])
	}
}

func TestListNotRetriedAfterFnSawKeys(t *testing.T) {
	ctx := context.Background()
	fs := newFS(t)
	for _, k := range []string{"a", "b"} {
		if err := fs.Put(ctx, k, strings.NewReader(k), 1); err != nil {
			t.Fatal(err)
		}
	}
	b := objstore.WithRetries(fs, fastRetries())
	calls := 0
	err := b.List(ctx, "", func(objstore.Attrs) error { calls++; return errTransient503 })
	if !errors.Is(err, objstore.ErrTransient) || calls != 1 {
		t.Errorf("List: err %v after %d fn calls, want 1", err, calls)
	}
}

// An attempt that hangs is cut by PerAttemptTimeout and retried; the body
// of the successful GetRange stays readable after GetRange returns.
func TestPerAttemptTimeout(t *testing.T) {
	fs := newFS(t)
	if err := fs.Put(context.Background(), "k", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	// synctest's fake clock: the timeouts fire exactly when every goroutine
	// in the bubble is blocked, whatever the machine's load.
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{Bucket: fs, failures: 2, block: true}
		cfg := fastRetries()
		cfg.PerAttemptTimeout = time.Second
		rc, err := objstore.WithRetries(f, cfg).GetRange(context.Background(), "k", 0, -1)
		if err != nil {
			t.Fatalf("GetRange: %v", err)
		}
		got, err := io.ReadAll(rc)
		if cerr := rc.Close(); cerr != nil {
			t.Error(cerr)
		}
		if string(got) != "hello" || err != nil || f.calls["get"] != 3 {
			t.Errorf("read %q, %v after %d calls; want hello after 3", got, err, f.calls["get"])
		}
	})
}

func TestMetricsNotFound(t *testing.T) {
	c := &objstore.Counters{}
	b := objstore.WithMetrics(newFS(t), c)
	if _, err := b.GetRange(context.Background(), "missing", 0, -1); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	if s := c.Snapshot()[objstore.OpGet]; s.Requests != 1 || s.Errors != 1 || s.NotFound != 1 {
		t.Errorf("get stats %+v", s)
	}
}
