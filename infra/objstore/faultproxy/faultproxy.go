// Package faultproxy is an HTTP proxy in front of an S3 server that
// injects faults: 500s and 503s by plan or rate, stalls, delays, and PUTs
// or DELETEs caught before or after they land. Tests start it through
// objstoretest.StartFaultProxy; the chaos suite, which does not link
// package testing, uses it directly.
package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
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

// Catch is what FaultProxy does with a request it catches (Catch, HoldPuts).
type Catch int

const (
	// CatchBefore holds the request (a PUT or DELETE): it never reaches
	// the S3 server.
	CatchBefore Catch = iota
	// CatchAfter sends the PUT to the S3 server, then holds its answer:
	// the object is stored but the client never learns it.
	CatchAfter
	// CatchLate keeps the PUT, unsent, until ReleaseLate sends it: a
	// request delayed in the network that lands after its sender died.
	CatchLate
)

func (c Catch) String() string { return [...]string{"before", "after", "late"}[c] }

// FaultProxy is an HTTP reverse proxy on 127.0.0.1 in front of an S3
// server that applies a plan of faults to the requests it receives, in
// order, and forwards the rest; the requests the plan says nothing of can
// fail at a random rate instead (SetErrorRate). It can also delay every
// request (a slow server), and catch requests of chosen keys: hold every
// PUT (HoldPuts: an upload cut off half-way, as when its sender dies), or
// one request, held before or after it reached the server, or sent late
// (Catch: so that a test can kill the node at a chosen point of an upload
// or of its clean-up). The delay comes first, and a caught request takes
// no fault. The Host header is kept, so SigV4 signatures made for the
// proxy's address stay valid.
//
// It is the one S3 fault proxy: the S3 tests, internal/tieringe2e and the
// shipped chaos suite use it.
type FaultProxy struct {
	// URL is the proxy's endpoint.
	URL string

	srv    *http.Server
	target *url.URL
	held   chan string // the path of each caught request (buffered; later ones dropped)

	mu struct {
		sync.Mutex
		plan     []Fault
		injected map[Fault]int
		requests int
		delay    time.Duration
		// The catch rule: requests with method of a path ending in
		// suffix ("" catches nothing), once or all of them.
		method, suffix string
		mode           Catch
		once           bool
		late           *heldRequest // caught by CatchLate, not yet released
		errPermille    int          // of the requests without a planned fault
		rng            *rand.Rand
	}
}

// heldRequest is a caught PUT, kept whole so that it can be sent again with
// its SigV4 signature intact.
type heldRequest struct {
	path, rawQuery, host string
	header               http.Header
	body                 []byte
}

// NewFaultProxy starts a proxy to target (an http:// URL); Close stops
// it.
func NewFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{URL: "http://" + ln.Addr().String(), target: u, held: make(chan string, 16)}
	p.mu.injected = map[Fault]int{}
	p.mu.rng = rand.New(rand.NewPCG(1, 2))
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}, ErrorLog: log.New(io.Discard, "", 0)} // the client gets a 502
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delay, catch, caught := p.arrive(r)
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if caught {
			p.serveCaught(w, r, catch)
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
	})}
	go p.srv.Serve(ln) // ends at Close
	return p, nil
}

// Close stops the proxy and ends the requests it holds.
func (p *FaultProxy) Close() { p.srv.Close() }

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
// its client gives up (CatchBefore); "" stops. Held reports each one. It
// replaces the rule of Catch.
func (p *FaultProxy) HoldPuts(suffix string) { p.setCatch(http.MethodPut, suffix, CatchBefore, false) }

// Catch catches the next request with method of a path ending in suffix,
// once, as mode says (CatchAfter and CatchLate are for PUTs); it never
// answers it, and returns once the client hangs up (its node is killed) or
// the proxy closes. Held reports it. It replaces the rule of HoldPuts.
func (p *FaultProxy) Catch(method, suffix string, mode Catch) { p.setCatch(method, suffix, mode, true) }

func (p *FaultProxy) setCatch(method, suffix string, mode Catch, once bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.method, p.mu.suffix, p.mu.mode, p.mu.once = method, suffix, mode, once
}

// Held receives the path of each request that HoldPuts or Catch caught
// (the first 16 not yet received; later ones are dropped).
func (p *FaultProxy) Held() <-chan string { return p.held }

// SetErrorRate answers permille in 1000 of the requests that the plan has
// no fault for with 503 SlowDown or 500 InternalError (half each), chosen
// by a generator with a fixed seed; 0 stops.
func (p *FaultProxy) SetErrorRate(permille int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.errPermille = permille
}

// ReleaseLate sends the PUT caught by CatchLate to the S3 server; an answer
// other than 2xx is an error.
func (p *FaultProxy) ReleaseLate(ctx context.Context) error {
	p.mu.Lock()
	h := p.mu.late
	p.mu.late = nil
	p.mu.Unlock()
	if h == nil {
		return fmt.Errorf("FaultProxy: no late PUT held")
	}
	return p.send(ctx, h)
}

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

// arrive counts r and returns the delay to apply to it and whether (and
// how) to catch it, disarming a rule for one request.
func (p *FaultProxy) arrive(r *http.Request) (time.Duration, Catch, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.requests++
	s := p.mu.suffix
	if s == "" || r.Method != p.mu.method || !strings.HasSuffix(r.URL.Path, s) {
		return p.mu.delay, 0, false
	}
	if p.mu.once {
		p.mu.suffix = ""
	}
	return p.mu.delay, p.mu.mode, true
}

// next returns the fault for a request that is not caught: the plan's
// next, else one at the error rate, else Pass.
func (p *FaultProxy) next() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := Pass
	switch {
	case len(p.mu.plan) > 0:
		f = p.mu.plan[0]
		p.mu.plan = p.mu.plan[1:]
	case p.mu.errPermille > 0 && p.mu.rng.IntN(1000) < p.mu.errPermille:
		f = InternalError
		if p.mu.rng.IntN(2) == 0 {
			f = SlowDown
		}
	}
	if f != Pass {
		p.mu.injected[f]++
	}
	return f
}

// serveCaught never answers: it reads the body (draining it is what lets
// the server notice the client hanging up), does what mode says, reports
// the path on Held, and returns once the client hangs up or the proxy
// closes. Nothing reaches the S3 server but a CatchAfter PUT.
func (p *FaultProxy) serveCaught(w http.ResponseWriter, r *http.Request, mode Catch) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away mid-body: nothing caught
	}
	h := &heldRequest{path: r.URL.Path, rawQuery: r.URL.RawQuery, host: r.Host, header: r.Header.Clone(), body: body}
	switch mode {
	case CatchAfter:
		if err := p.send(r.Context(), h); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	case CatchLate:
		p.mu.Lock()
		p.mu.late = h
		p.mu.Unlock()
	}
	select {
	case p.held <- r.URL.Path:
	default:
	}
	<-r.Context().Done()
}

// send sends a caught PUT to the S3 server; an answer other than 2xx is an
// error.
func (p *FaultProxy) send(ctx context.Context, h *heldRequest) error {
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

func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code string) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by FaultProxy</Message><Resource>%s</Resource></Error>`, code, r.URL.Path)
	}
}
