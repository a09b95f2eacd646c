package objstoretest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/objstore/faultproxy"
)

func TestFaultProxy(t *testing.T) {
	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(backend.Close)
	p := StartFaultProxy(t, backend.URL)
	do := func(ctx context.Context, method, path string) (int, error) { return request(t, ctx, p, method, path) }

	p.SetPlan(InternalError, Pass)
	for _, want := range []int{500, 200, 200} {
		if code, err := do(context.Background(), http.MethodGet, "/b/k"); err != nil || code != want {
			t.Fatalf("GET: %d, %v; want %d", code, err, want)
		}
	}
	if inj := p.Injected(); inj[InternalError] != 1 || reached.Load() != 2 {
		t.Fatalf("injected %v, backend reached %d times; want one 500 and two passes", inj, reached.Load())
	}

	p.HoldPuts(".timeindex")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	putErr := make(chan error, 1)
	go func() { _, err := do(ctx, http.MethodPut, "/b/0.timeindex"); putErr <- err }()
	select {
	case path := <-p.Held():
		if path != "/b/0.timeindex" {
			t.Fatalf("held %q", path)
		}
	case err := <-putErr:
		t.Fatalf("a held PUT was answered (%v)", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the held PUT was not reported in 10 s")
	}
	cancel() // the client gives up
	if err := <-putErr; err == nil {
		t.Fatal("a held PUT was answered")
	}
	if code, err := do(context.Background(), http.MethodPut, "/b/0.log"); err != nil || code != 200 {
		t.Fatalf("PUT of another key: %d, %v", code, err)
	}
	if reached.Load() != 3 {
		t.Fatalf("backend reached %d times, want 3 (the held PUT never arrives)", reached.Load())
	}
	p.HoldPuts("")

	p.SetDelay(100 * time.Millisecond)
	start := time.Now()
	if code, err := do(context.Background(), http.MethodGet, "/b/k"); err != nil || code != 200 {
		t.Fatalf("delayed GET: %d, %v", code, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("delayed GET answered after %v, want at least 100ms", d)
	}
	if p.Requests() != 6 {
		t.Fatalf("%d requests counted, want 6", p.Requests())
	}
}

// The chaos suite's random errors, and the catches the kill tests use: one
// request held before the server, one stored and then held, one kept and
// sent late.
func TestFaultProxyErrorRateAndCatch(t *testing.T) {
	var mu sync.Mutex
	stored := map[string]string{}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPut {
			stored[r.URL.Path] = string(b)
		}
	}))
	t.Cleanup(backend.Close)
	p, err := faultproxy.NewFaultProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	do := func(ctx context.Context, method, path string) (int, error) { return request(t, ctx, p, method, path) }
	has := func(path string) bool { mu.Lock(); defer mu.Unlock(); _, ok := stored[path]; return ok }

	p.SetErrorRate(500)
	failed := 0
	for range 200 {
		code, err := do(context.Background(), http.MethodGet, "/b/k")
		if err != nil {
			t.Fatal(err)
		}
		if code != 200 {
			failed++
		}
	}
	inj := p.Injected()
	if failed < 50 || failed > 150 || inj[InternalError]+inj[SlowDown] != failed || inj[InternalError] == 0 || inj[SlowDown] == 0 {
		t.Fatalf("%d of 200 failed at 500 permille, injected %v", failed, inj)
	}
	p.SetErrorRate(0)

	// catch returns once the caught request is reported, with a cancel
	// that makes its client give up, and the client's result.
	catch := func(method, path string) (context.CancelFunc, <-chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { _, err := do(ctx, method, path); res <- err }()
		select {
		case got := <-p.Held():
			if got != path {
				t.Fatalf("caught %q, want %q", got, path)
			}
		case err := <-res:
			t.Fatalf("%s %s was answered (%v)", method, path, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s not caught in 10 s", method, path)
		}
		return cancel, res
	}
	for _, c := range []struct {
		mode   Catch
		stored bool
	}{{CatchBefore, false}, {CatchAfter, true}, {CatchLate, false}} {
		path := "/b/" + c.mode.String() + ".log"
		p.Catch(http.MethodPut, ".log", c.mode)
		cancel, res := catch(http.MethodPut, path)
		cancel()
		if err := <-res; err == nil {
			t.Fatalf("catch %v: the PUT was answered", c.mode)
		}
		if has(path) != c.stored {
			t.Fatalf("catch %v: stored = %v, want %v", c.mode, has(path), c.stored)
		}
		// The catch is for one request: the next passes.
		if code, err := do(context.Background(), http.MethodPut, "/b/next-"+c.mode.String()+".log"); err != nil || code != 200 {
			t.Fatalf("catch %v: the next PUT: %d, %v", c.mode, code, err)
		}
	}
	if err := p.ReleaseLate(context.Background()); err != nil || !has("/b/late.log") {
		t.Fatalf("ReleaseLate: %v, stored %v", err, has("/b/late.log"))
	}
	if err := p.ReleaseLate(context.Background()); err == nil {
		t.Fatal("a second ReleaseLate sent something")
	}
}

// request sends method path with a small body through p and returns the
// status code, or the client's error.
func request(t *testing.T, ctx context.Context, p *FaultProxy, method, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.URL+path, strings.NewReader("body of "+path))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
