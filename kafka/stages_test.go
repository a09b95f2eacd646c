package kafka

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// stageRecorder is a StageObserver that keeps every observation.
type stageRecorder struct {
	mu     sync.Mutex
	obs    []stageObservation
	totals int // ObserveRequest calls, which must not happen
}

type stageObservation struct {
	key, version int16
	st           RequestStages
	err          error
}

func (r *stageRecorder) ObserveRequest(int16, int16, time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.totals++
}

func (r *stageRecorder) ObserveStages(req *Request, st RequestStages, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs = append(r.obs, stageObservation{req.Key, req.Version, st, err})
}

// waitN polls until n observations are recorded and returns them.
func (r *stageRecorder) waitN(t *testing.T, n int) []stageObservation {
	t.Helper()
	var out []stageObservation
	err := proctest.Poll(testTimeout, time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.obs) < n {
			return false
		}
		out = append([]stageObservation(nil), r.obs...)
		return true
	})
	if err != nil {
		t.Fatalf("waiting for %d stage observations: %v", n, err)
	}
	return out
}

// checkStages fails unless every stage is >= 0 and they add up to Total.
func checkStages(t *testing.T, what string, st RequestStages) {
	t.Helper()
	for name, d := range map[string]time.Duration{"request queue": st.RequestQueue, "local": st.Local,
		"remote": st.Remote, "response queue": st.ResponseQueue, "response send": st.ResponseSend, "total": st.Total} {
		if d < 0 {
			t.Errorf("%s: %s time %v is negative (%+v)", what, name, d, st)
		}
	}
	if sum := st.RequestQueue + st.Local + st.Remote + st.ResponseQueue + st.ResponseSend; sum > st.Total || sum != st.Total {
		t.Errorf("%s: stages add up to %v, total %v (%+v)", what, sum, st.Total, st)
	}
}

// TestRequestStages: over a real TCP connection, a plain reply, a reply
// whose handler the test holds, a Reply.Wait the test holds, and a handler
// failure are each reported once to the StageObserver (and not to
// ObserveRequest), with stages >= 0 that add up to the total; the held
// handler's time is in Local and the held Wait's in Remote, each at least as
// long as the test held it.
func TestRequestStages(t *testing.T) {
	obs := &stageRecorder{}
	handlerIn, handlerGo := make(chan struct{}), make(chan struct{})
	waitIn, waitGo := make(chan struct{}), make(chan struct{})
	ts := startServer(t, ServerConfig{Observer: obs}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			switch req.CorrelationID {
			case 2: // the handler blocks until the test lets it go
				close(handlerIn)
				<-handlerGo
				return Reply{Response: metadataReply(req, "h", 1)}, nil
			case 3: // the reply waits until the test lets it go
				return Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
					close(waitIn)
					select {
					case <-waitGo:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return metadataReply(req, "h", 1), nil
				}}, nil
			}
			return Reply{}, errors.New("boom")
		})
	})
	c := dialRaw(t, ts.addr)

	c.roundTrip(1)

	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 2)
	<-handlerIn
	heldFrom := time.Now()
	heldHandler := holdUntilAfter(heldFrom)
	close(handlerGo)
	c.recv(&kmsg.MetadataResponse{Version: 7})

	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 3)
	<-waitIn
	heldFrom = time.Now()
	heldWait := holdUntilAfter(heldFrom)
	close(waitGo)
	c.recv(&kmsg.MetadataResponse{Version: 7})

	obs.waitN(t, 3) // the writer reports after writing; the failure below is reported by the dispatcher
	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 4)
	c.expectClosed()

	got := obs.waitN(t, 4)
	if len(got) != 4 || obs.totals != 0 {
		t.Fatalf("%d stage observations and %d ObserveRequest calls, want 4 and 0: %+v", len(got), obs.totals, got)
	}
	for i, o := range got {
		checkStages(t, kmsg.NameForKey(o.key), o.st)
		if want := []int16{18, 3, 3, 3}[i]; o.key != want {
			t.Errorf("observation %d: key %d, want %d", i, o.key, want)
		}
	}
	if o := got[0]; o.err != nil || o.st.Remote != 0 {
		t.Errorf("ApiVersions: err %v, remote %v; want no error and no remote time", o.err, o.st.Remote)
	}
	if o := got[1]; o.st.Local < heldHandler || o.st.Remote != 0 {
		t.Errorf("held handler: local %v, remote %v; want local >= %v held by the test, no remote", o.st.Local, o.st.Remote, heldHandler)
	}
	if o := got[2]; o.st.Remote < heldWait || o.err != nil {
		t.Errorf("held Wait: remote %v, err %v; want remote >= %v held by the test", o.st.Remote, o.err, heldWait)
	}
	if o := got[3]; o.err == nil || o.st.Remote != 0 || o.st.ResponseQueue != 0 || o.st.ResponseSend != 0 {
		t.Errorf("failed handler: err %v, stages %+v; want the error and request queue and local only", o.err, o.st)
	}
}

// holdUntilAfter keeps what the test holds held until the clock has moved
// at least a millisecond past from, yielding the processor meanwhile, and
// returns the time since from. The tests assert only that the server
// measured at least this long, never an upper bound.
func holdUntilAfter(from time.Time) time.Duration {
	for time.Since(from) < time.Millisecond {
		runtime.Gosched()
	}
	return time.Since(from)
}

// TestSlowRequestLog: with a tiny threshold every request logs one Info
// line with its API, version, correlation id, client id and stages; with a
// threshold no request reaches, none does.
func TestSlowRequestLog(t *testing.T) {
	ts := startServer(t, ServerConfig{SlowRequestThreshold: time.Nanosecond}, nil)
	c := dialRaw(t, ts.addr)
	c.roundTrip(41)
	line := ts.logs.waitLine(t, "INFO kafka: slow request", "api=ApiVersions", "version=3", "correlation_id=41",
		"client_id=raw-test", "total_ms=", "request_queue_ms=", "local_ms=", "remote_ms=", "response_queue_ms=", "response_send_ms=")
	if strings.Contains(line, "suppressed=") || strings.Contains(line, "err=") {
		t.Errorf("slow line of a lone answered request: %s", line)
	}

	obs := &stageRecorder{}
	quiet := startServer(t, ServerConfig{SlowRequestThreshold: time.Hour, Observer: obs}, nil)
	qc := dialRaw(t, quiet.addr)
	qc.roundTrip(42)
	obs.waitN(t, 1) // the slow log runs before the observer
	quiet.logs.mu.Lock()
	defer quiet.logs.mu.Unlock()
	for _, l := range quiet.logs.lines {
		if strings.Contains(l, "slow request") {
			t.Fatalf("a request under the threshold was logged: %s", l)
		}
	}
}

// TestSlowRequestLogRate: pipelined slow requests on one connection log at
// most slowLogBurst lines per second; the rest are counted, not logged.
func TestSlowRequestLogRate(t *testing.T) {
	const n = 3 * slowLogBurst
	obs := &stageRecorder{}
	ts := startServer(t, ServerConfig{SlowRequestThreshold: time.Nanosecond, Observer: obs}, nil)
	c := dialRaw(t, ts.addr)
	start := time.Now()
	for i := range n {
		c.roundTrip(int32(i))
	}
	obs.waitN(t, n)
	elapsed := time.Since(start)
	ts.logs.mu.Lock()
	defer ts.logs.mu.Unlock()
	lines := 0
	for _, l := range ts.logs.lines {
		if strings.Contains(l, "slow request") {
			lines++
		}
	}
	// The lines fall in at most elapsed/1s+1 windows, slowLogBurst each.
	if limit := slowLogBurst * (int(elapsed/time.Second) + 1); lines < 1 || lines > limit {
		t.Fatalf("%d slow lines for %d slow requests in %v, want 1..%d", lines, n, elapsed, limit)
	}
}

// TestSlowLogAllow: the rate limit as a function of the clock.
func TestSlowLogAllow(t *testing.T) {
	l := &slowLog{threshold: time.Millisecond}
	t0 := time.Unix(1000, 0)
	for i := range slowLogBurst {
		if ok, held := l.allow(t0.Add(time.Duration(i) * time.Millisecond)); !ok || held != 0 {
			t.Fatalf("line %d of the first window: ok %v, held %d", i, ok, held)
		}
	}
	for i := range 3 {
		if ok, _ := l.allow(t0.Add(500 * time.Millisecond)); ok {
			t.Fatalf("line %d over the burst was allowed", slowLogBurst+i)
		}
	}
	if ok, held := l.allow(t0.Add(999 * time.Millisecond)); ok || held != 0 {
		t.Fatalf("still in the first window: ok %v, held %d", ok, held)
	}
	if ok, held := l.allow(t0.Add(time.Second)); !ok || held != 4 {
		t.Fatalf("first line of the next window: ok %v, held %d, want true and 4", ok, held)
	}
	if ok, held := l.allow(t0.Add(time.Second + time.Millisecond)); !ok || held != 0 {
		t.Fatalf("second line of the next window: ok %v, held %d, want true and 0", ok, held)
	}
	if ok, _ := l.allow(t0); !ok {
		t.Fatal("a clock stepped back starts a new window")
	}
}

// TestRequestStagesHandlerWait: over a real TCP connection, the waits a
// handler reports with Request.Waited are counted in Remote and taken out of
// Local, the stages still adding up to the total exactly: a handler that
// reports a wait the test holds has exactly that wait in Remote (at least as
// long as the test held it); a wait reported larger than the handler's run
// moves the whole run and no more (Local zero); a failed handler's reported
// wait is in Remote too; and a reported wait adds to a Reply.Wait's.
func TestRequestStagesHandlerWait(t *testing.T) {
	obs := &stageRecorder{}
	waitIn, waitGo := make(chan struct{}), make(chan struct{})
	replyIn, replyGo := make(chan struct{}), make(chan struct{})
	reported := make(map[int32]time.Duration) // by correlation id; written by the handler before its reply
	var mu sync.Mutex
	report := func(req *Request, d time.Duration) {
		req.Waited(d)
		mu.Lock()
		reported[req.CorrelationID] += d
		mu.Unlock()
	}
	ts := startServer(t, ServerConfig{Observer: obs}, func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			switch req.CorrelationID {
			case 1: // waits until the test lets it go, and reports the wait
				from := time.Now()
				close(waitIn)
				<-waitGo
				report(req, time.Since(from))
				req.Waited(0) // ignored
				req.Waited(-time.Second)
				return Reply{Response: metadataReply(req, "h", 1)}, nil
			case 2: // reports more than its run
				report(req, time.Hour)
				return Reply{Response: metadataReply(req, "h", 1)}, nil
			case 3: // reports two waits, then its Reply.Wait is held
				report(req, time.Nanosecond)
				report(req, 2*time.Nanosecond)
				return Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
					close(replyIn)
					select {
					case <-replyGo:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return metadataReply(req, "h", 1), nil
				}}, nil
			}
			report(req, time.Nanosecond)
			return Reply{}, errors.New("boom")
		})
	})
	c := dialRaw(t, ts.addr)

	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 1)
	<-waitIn
	held := holdUntilAfter(time.Now())
	close(waitGo)
	c.recv(&kmsg.MetadataResponse{Version: 7})

	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 2)
	c.recv(&kmsg.MetadataResponse{Version: 7})

	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 3)
	<-replyIn
	heldReply := holdUntilAfter(time.Now())
	close(replyGo)
	c.recv(&kmsg.MetadataResponse{Version: 7})

	obs.waitN(t, 3)
	c.send(versioned(kmsg.NewPtrMetadataRequest(), 7), 4)
	c.expectClosed()

	got := obs.waitN(t, 4)
	if len(got) != 4 {
		t.Fatalf("%d stage observations, want 4: %+v", len(got), got)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, o := range got {
		checkStages(t, fmt.Sprintf("request %d", i+1), o.st)
	}
	if o := got[0]; o.st.Remote != reported[1] || o.st.Remote < held || o.err != nil {
		t.Errorf("reported wait: remote %v, err %v; want remote = the %v reported, >= %v held by the test (local %v)",
			o.st.Remote, o.err, reported[1], held, o.st.Local)
	}
	if o := got[1]; o.st.Local != 0 || o.st.Remote <= 0 {
		t.Errorf("wait reported longer than the run: local %v, remote %v; want local 0 and the run in remote", o.st.Local, o.st.Remote)
	}
	if o := got[2]; o.st.Remote < reported[3]+heldReply || o.err != nil {
		t.Errorf("reported wait and held Reply.Wait: remote %v, err %v; want >= %v reported + %v held", o.st.Remote, o.err, reported[3], heldReply)
	}
	if o := got[3]; o.err == nil || o.st.Remote != reported[4] || o.st.ResponseQueue != 0 || o.st.ResponseSend != 0 {
		t.Errorf("failed handler that reported %v: err %v, stages %+v; want the error, the wait in remote, no response stages", reported[4], o.err, o.st)
	}
}
