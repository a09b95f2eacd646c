package tieringe2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// catchMode says what the kill proxy does with the request it catches.
type catchMode int

const (
	// catchBefore holds the request (PUT or DELETE): it never reaches the
	// S3 server.
	catchBefore catchMode = iota
	// catchAfter sends the PUT to the S3 server, then holds its answer:
	// the object is stored but the uploader never learns it.
	catchAfter
	// catchLate keeps the PUT, unsent, until releaseLate sends it: a
	// request delayed in the network that lands after its sender died.
	catchLate
)

func (m catchMode) String() string {
	return [...]string{"before", "after", "late"}[m]
}

// heldPut is a caught PUT, kept whole so that it can be sent again with its
// SigV4 signature intact.
type heldPut struct {
	path, rawQuery, host string
	header               http.Header
	body                 []byte
}

// killProxy sits between a node and the S3 server and catches one request
// per arm, so that the test can kill the node at a chosen point of an
// upload or of its clean-up.
// Other requests pass through with their Host header kept (SigV4 stays
// valid).
type killProxy struct {
	URL    string
	bucket string
	target *url.URL
	// caught receives the key of each caught request (one per arm).
	caught chan string

	mu struct {
		sync.Mutex
		method string
		suffix string // "" when disarmed
		mode   catchMode
		late   *heldPut
	}
}

func startKillProxy(t testing.TB, target, bucket string) *killProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &killProxy{bucket: bucket, target: u, caught: make(chan string, 1)}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/"+bucket+"/")
		if mode, ok := p.take(r.Method, key); ok {
			p.serveCaught(w, r, key, mode)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// arm makes the proxy catch the next request with method of a key ending
// in suffix. catchAfter and catchLate are for PUTs only.
func (p *killProxy) arm(method, suffix string, mode catchMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.method, p.mu.suffix, p.mu.mode = method, suffix, mode
}

// take disarms the proxy and returns its mode if the request is the one
// armed for.
func (p *killProxy) take(method, key string) (catchMode, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.suffix == "" || method != p.mu.method || !strings.HasSuffix(key, p.mu.suffix) {
		return 0, false
	}
	p.mu.suffix = ""
	return p.mu.mode, true
}

// serveCaught never answers: it returns once the client hangs up (the node
// is killed) or the proxy closes.
func (p *killProxy) serveCaught(w http.ResponseWriter, r *http.Request, key string, mode catchMode) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away mid-body: nothing caught
	}
	h := &heldPut{path: r.URL.Path, rawQuery: r.URL.RawQuery, host: r.Host, header: r.Header.Clone(), body: body}
	switch mode {
	case catchAfter:
		if err := p.send(r.Context(), h); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	case catchLate:
		p.mu.Lock()
		p.mu.late = h
		p.mu.Unlock()
	}
	select {
	case p.caught <- key:
	case <-r.Context().Done():
		return
	}
	<-r.Context().Done()
}

// send sends a held PUT to the S3 server; an answer other than 2xx is an error.
func (p *killProxy) send(ctx context.Context, h *heldPut) error {
	u := *p.target
	u.Path, u.RawQuery = h.path, h.rawQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), bytes.NewReader(h.body))
	if err != nil {
		return err
	}
	req.Header = h.header.Clone()
	req.Host = h.host
	req.ContentLength = int64(len(h.body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s: %s", h.path, resp.Status, msg)
	}
	return nil
}

// releaseLate sends the PUT caught in catchLate mode to the S3 server.
func (p *killProxy) releaseLate(ctx context.Context) error {
	p.mu.Lock()
	h := p.mu.late
	p.mu.late = nil
	p.mu.Unlock()
	if h == nil {
		return fmt.Errorf("killProxy: no late PUT held")
	}
	return p.send(ctx, h)
}
