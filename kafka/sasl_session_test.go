package kafka

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// loginMech logs every client in as alice, in one step.
type loginMech struct{}

func (loginMech) Name() string        { return "TEST" }
func (loginMech) Start() SASLExchange { return loginMech{} }
func (loginMech) Step(context.Context, []byte) ([]byte, bool, string, error) {
	return nil, true, "alice", nil
}

// expiredSessions counts the connections closed for an expired session.
type expiredSessions struct{ n atomic.Int32 }

func (*expiredSessions) ObserveAuthentication(string, string, bool, error) {}
func (e *expiredSessions) ObserveExpiredSession(string)                    { e.n.Add(1) }

// TestSessionServesWhatWasReadBeforeItsEnd: a request the connection read
// before its session's end (KIP-368) is answered, however late the
// dispatcher comes to it, behind a slow handler or a throttled reply;
// Kafka's Processor, too, judges a request by when it was received. The
// first request read after the end closes the connection. synctest's clock
// makes "before" and "after" exact: time moves only while every goroutine
// of the server and the client waits.
func TestSessionServesWhatWasReadBeforeItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		// held is the handler of the request in front, read with the
		// one behind it half-way through the 1 s session; it keeps the
		// dispatcher from the one behind until past the session's end.
		held func(req *Request, release <-chan struct{})
		// release lets the held request go after the session's end.
		release bool
	}{
		{"behind a slow handler", func(_ *Request, release <-chan struct{}) { <-release }, true},
		{"behind a throttled reply", func(req *Request, _ <-chan struct{}) { req.Throttle(time.Second) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				reg := NewRegistry()
				RegisterSASL(reg)
				reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *Request) (Reply, error) {
					if req.CorrelationID == 3 {
						tc.held(req, release)
					}
					return Reply{Response: req.Msg.ResponseKind()}, nil
				})
				obs := &expiredSessions{}
				s := NewServer(ServerConfig{AuthObserver: obs}, reg, slog.New(&logSink{}))
				ln := newPipeListener()
				defer serveInBackground(t, s, "ServeListener", func() error {
					return s.ServeListener(ln, Listener{Name: "SASL_PLAINTEXT", SASL: []SASLMechanism{loginMech{}}, MaxReauth: time.Second})
				})()
				nc := ln.dial()
				defer nc.Close()
				c := newRawClient(t, nc)

				hs := kmsg.NewPtrSASLHandshakeRequest()
				hs.Version, hs.Mechanism = 1, "TEST"
				au := kmsg.NewPtrSASLAuthenticateRequest()
				au.Version = 2
				// Written at once, as a pipelining client over TCP
				// would; the server reads them one at a time before
				// authentication, so the pipe's write ends only then.
				go nc.Write(append(c.frame(hs, 1), c.frame(au, 2)...))
				aresp := kmsg.NewPtrSASLAuthenticateResponse()
				aresp.Version = 2
				for corr, resp := range []kmsg.Response{&kmsg.SASLHandshakeResponse{Version: 1}, aresp} {
					if got := c.recv(resp); got != int32(corr+1) {
						t.Fatalf("reply to %d, want %d", got, corr+1)
					}
				}
				if aresp.ErrorCode != 0 || aresp.SessionLifetimeMillis != 1000 {
					t.Fatalf("login: code %d, lifetime %d ms", aresp.ErrorCode, aresp.SessionLifetimeMillis)
				}

				time.Sleep(500 * time.Millisecond)
				dc := kmsg.NewPtrDescribeClusterRequest()
				c.write(append(c.frame(dc, 3), c.frame(dc, 4)...)) // both read at 0.5 s
				synctest.Wait()
				time.Sleep(time.Second) // past the session's end
				if tc.release {
					close(release)
				}
				for want := int32(3); want <= 4; want++ {
					if corr, _, err := c.readFrame(); err != nil || corr != want {
						t.Fatalf("reply to %d, %v; want request %d, read before the session's end, answered", corr, err, want)
					}
				}
				if n := obs.n.Load(); n != 0 {
					t.Fatalf("%d expired sessions before a request read after the end", n)
				}

				c.send(dc, 5) // read at 1.5 s or later
				c.expectClosed()
				if n := obs.n.Load(); n != 1 {
					t.Fatalf("%d expired sessions, want 1", n)
				}
			})
		})
	}
}
