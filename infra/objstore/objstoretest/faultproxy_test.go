package objstoretest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFaultProxy(t *testing.T) {
	var reached atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(backend.Close)
	p := StartFaultProxy(t, backend.URL)
	do := func(ctx context.Context, method, path string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, method, p.URL+path, strings.NewReader("body"))
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
