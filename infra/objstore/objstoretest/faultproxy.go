package objstoretest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what FaultProxy does to one request.
type Fault int

const (
	// Pass forwards the request.
	Pass Fault = iota
	// InternalError answers 500 InternalError.
	InternalError
	// SlowDown answers 503 SlowDown, S3's throttling reply.
	SlowDown
	// Stall reads the request and holds it without an answer until the
	// client gives up (or SlowLimit passes, and then answers 503 SlowDown).
	Stall
)

// SlowLimit bounds how long a Stall holds a request.
const SlowLimit = 30 * time.Second

func (f Fault) String() string {
	return [...]string{"pass", "500 InternalError", "503 SlowDown", "stall"}[f]
}

// FaultProxy is an HTTP reverse proxy on 127.0.0.1 in front of an S3
// server that applies a plan of faults to the requests it receives, in
// order, and forwards the rest. It can also delay every request (a slow
// server) and hold the PUTs of chosen keys (an upload cut off half-way, as
// when its sender dies); the delay comes first, and a held PUT takes no
// fault of the plan. The Host header is kept, so SigV4 signatures made for
// the proxy's address stay valid.
type FaultProxy struct {
	// URL is the proxy's endpoint.
	URL string

	held chan string // the path of each held PUT (buffered; later ones dropped)

	mu struct {
		sync.Mutex
		plan       []Fault
		injected   map[Fault]int
		requests   int
		delay      time.Duration
		holdSuffix string // "" holds nothing
	}
}

// StartFaultProxy starts a proxy to target (an http:// URL), closed when
// the test ends.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{held: make(chan string, 16)}
	p.mu.injected = map[Fault]int{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delay, hold := p.arrive(r)
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if hold {
			select {
			case p.held <- r.URL.Path:
			default:
			}
			// Drain the body first (only then does the server notice the
			// client hanging up), then hold the request until the client
			// gives up or the proxy closes. Nothing reaches the S3 server.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		switch p.next() {
		case InternalError:
			writeS3Error(w, r, http.StatusInternalServerError, "InternalError")
		case SlowDown:
			writeS3Error(w, r, http.StatusServiceUnavailable, "SlowDown")
		case Stall:
			// Drain the body first: only then does the server notice the
			// client hanging up and cancel r's context.
			_, _ = io.Copy(io.Discard, r.Body)
			t := time.NewTimer(SlowLimit)
			defer t.Stop()
			select {
			case <-r.Context().Done():
			case <-t.C:
				writeS3Error(w, r, http.StatusServiceUnavailable, "SlowDown")
			}
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetPlan replaces the faults for the next requests.
func (p *FaultProxy) SetPlan(plan ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.plan = append([]Fault(nil), plan...)
}

// SetDelay makes every following request wait d before anything else is
// done with it; 0 stops.
func (p *FaultProxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.delay = d
}

// HoldPuts holds, from now on, every PUT of a path ending in suffix until
// its client gives up; "" stops. Held reports each one.
func (p *FaultProxy) HoldPuts(suffix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.holdSuffix = suffix
}

// Held receives the path of each PUT that HoldPuts held (the first 16 not
// yet received; later ones are dropped).
func (p *FaultProxy) Held() <-chan string { return p.held }

// Injected returns how many faults of each kind were applied; the caller
// owns the map.
func (p *FaultProxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Fault]int, len(p.mu.injected))
	for k, v := range p.mu.injected {
		out[k] = v
	}
	return out
}

// Requests returns how many requests the proxy received.
func (p *FaultProxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.requests
}

// arrive counts r and returns the delay to apply to it and whether to hold it.
func (p *FaultProxy) arrive(r *http.Request) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.requests++
	s := p.mu.holdSuffix
	return p.mu.delay, s != "" && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, s)
}

// next returns the fault for a request that is not held, taking it from the plan.
func (p *FaultProxy) next() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.plan) == 0 {
		return Pass
	}
	f := p.mu.plan[0]
	p.mu.plan = p.mu.plan[1:]
	if f != Pass {
		p.mu.injected[f]++
	}
	return f
}

func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code string) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by FaultProxy</Message><Resource>%s</Resource></Error>`, code, r.URL.Path)
	}
}
