package chaos

import (
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// S3Proxy stands between the nodes and versitygw and injects faults: a
// fraction of requests answered 503 SlowDown or 500 InternalError without
// reaching the server, and a delay before every request. The Host header
// is kept, so SigV4 signatures stay valid.
type S3Proxy struct {
	URL string
	srv *http.Server
	ln  net.Listener

	errPermille atomic.Int64 // requests in 1000 answered with an error
	delay       atomic.Int64 // ns added before each request
	requests    atomic.Int64
	injected    atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
}

func startS3Proxy(target string) (*S3Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &S3Proxy{URL: "http://" + ln.Addr().String(), ln: ln, rng: rand.New(rand.NewPCG(1, 2))}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}, ErrorLog: log.New(io.Discard, "", 0)}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		if pm := p.errPermille.Load(); pm > 0 {
			p.mu.Lock()
			hit := p.rng.Int64N(1000) < pm
			odd := p.rng.IntN(2) == 0
			p.mu.Unlock()
			if hit {
				p.injected.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				code, name := http.StatusServiceUnavailable, "SlowDown"
				if odd {
					code, name = http.StatusInternalServerError, "InternalError"
				}
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(code)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+name+`</Code><Message>injected by shale-chaos</Message></Error>`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go p.srv.Serve(ln) // ends at Close
	return p, nil
}

// SetErrors makes permille requests in 1000 fail (0 stops).
func (p *S3Proxy) SetErrors(permille int64) { p.errPermille.Store(permille) }

// SetDelay adds d before each request (0 stops).
func (p *S3Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops the proxy.
func (p *S3Proxy) Close() { p.srv.Close() }
