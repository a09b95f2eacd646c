package tieringe2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// s3Proxy sits between a node and an S3 endpoint (versitygw or a
// FaultProxy) and adds what FaultProxy lacks: a delay before every
// request (a slow server), and holding the PUTs of keys with a given
// suffix until the client gives up (an upload cut off half-way, as when
// the node dies). The Host header is kept, so SigV4 signatures stay valid.
type s3Proxy struct {
	URL string

	delay      atomic.Int64  // nanoseconds added before each request
	holdSuffix atomic.Value  // string: PUTs of keys ending in it are held
	held       chan string   // the path of each held PUT (buffered; extra ones dropped)
	requests   atomic.Uint64 // requests received
}

func startS3Proxy(t testing.TB, target string) *s3Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Proxy{held: make(chan string, 16)}
	p.holdSuffix.Store("")
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if d := time.Duration(p.delay.Load()); d > 0 {
			tm := time.NewTimer(d)
			select {
			case <-tm.C:
			case <-r.Context().Done():
				tm.Stop()
				return
			}
		}
		if s := p.holdSuffix.Load().(string); s != "" && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, s) {
			select {
			case p.held <- r.URL.Path:
			default:
			}
			// Drain the body first: only then does the server notice the
			// client hanging up. Nothing reaches the S3 server.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// setDelay makes every following request wait d first.
func (p *s3Proxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

// holdPuts holds, from now on, every PUT of a key ending in suffix ("" stops).
func (p *s3Proxy) holdPuts(suffix string) { p.holdSuffix.Store(suffix) }
