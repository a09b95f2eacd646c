package kafka

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigApiVersions is an ApiVersions v3 request whose frame is a little over
// size bytes (a long client software name, which the handler answers
// INVALID_REQUEST or not, either way answered).
func bigApiVersions(size int) *kmsg.ApiVersionsRequest {
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = strings.Repeat("a", size), "1"
	return av
}

// login runs SaslHandshake and SaslAuthenticate with loginMech's TEST
// mechanism, one request at a time.
func (c *rawClient) login(corr int32) {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "TEST"
	c.send(hs, corr)
	if got := c.recv(&kmsg.SASLHandshakeResponse{Version: 1}); got != corr {
		c.t.Fatalf("handshake reply %d, want %d", got, corr)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	c.send(au, corr+1)
	resp := &kmsg.SASLAuthenticateResponse{Version: 2}
	if got := c.recv(resp); got != corr+1 || resp.ErrorCode != 0 {
		c.t.Fatalf("authenticate reply %d, code %d", got, resp.ErrorCode)
	}
}

// TestSASLReceiveBeforeAuthenticationIsCapped: before a client has
// authenticated on a SASL listener, a request larger than
// sasl.server.max.receive.size (Kafka's default 524288 bytes) closes the
// connection with a log line, before anything is allocated for it, as
// Kafka's SaslServerAuthenticator fails such a receive; once authenticated,
// the same request is read (socket.request.max.bytes applies).
func TestSASLReceiveBeforeAuthenticationIsCapped(t *testing.T) {
	obs := &authCounts{}
	ln := listenTCP(t)
	ts := startServerListener(t, ln, ServerConfig{AuthObserver: obs}, Listener{Name: "SASL_PLAINTEXT", SASL: []SASLMechanism{loginMech{}}}, RegisterSASL)

	c := dialRaw(t, ts.addr)
	c.sendRefused(bigApiVersions(600<<10), 1)
	ts.logs.waitLine(t, "closing connection", "sasl.server.max.receive.size", "524288")
	if n := obs.failed.Load(); n != 1 {
		t.Fatalf("%d failed authentications counted, want 1 (Kafka counts an oversized receive as one)", n)
	}

	// A request under the cap is served before authentication.
	c = dialRaw(t, ts.addr)
	c.send(bigApiVersions(500<<10), 1)
	if got := c.recv(&kmsg.ApiVersionsResponse{Version: 3}); got != 1 {
		t.Fatalf("reply %d, want 1", got)
	}

	// After authentication the cap is socket.request.max.bytes.
	c = dialRaw(t, ts.addr)
	c.login(1)
	c.send(bigApiVersions(600<<10), 3)
	if got := c.recv(&kmsg.ApiVersionsResponse{Version: 3}); got != 3 {
		t.Fatalf("reply %d, want 3", got)
	}
}

// blockingMech logs every client in as alice, each step held until the
// test sends on release.
type blockingMech struct{ release chan struct{} }

func (blockingMech) Name() string          { return "TEST" }
func (m blockingMech) Start() SASLExchange { return m }
func (m blockingMech) Step(ctx context.Context, _ []byte) ([]byte, bool, string, error) {
	select {
	case <-m.release:
	case <-ctx.Done():
	}
	return nil, true, "alice", nil
}

// TestSASLNoPipeliningBeforeAuthentication: before authentication a SASL
// listener reads one request, answers it, and only then reads the next,
// as Kafka's SaslServerAuthenticator does (it reads no receive while a
// response is unsent), so an unauthenticated client holds at most one
// request in the node. After authentication the connection pipelines
// again. net.Pipe writes complete only when the server reads, and synctest
// tells when every goroutine waits, so "not read" is exact.
func TestSASLNoPipeliningBeforeAuthentication(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mech := blockingMech{release: make(chan struct{})}
		reg := NewRegistry()
		RegisterSASL(reg)
		held := make(chan struct{})
		reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *Request) (Reply, error) {
			if req.CorrelationID == 4 {
				<-held
			}
			return Reply{Response: req.Msg.ResponseKind()}, nil
		})
		s := NewServer(ServerConfig{}, reg, slog.New(&logSink{}))
		ln := newPipeListener()
		defer serveInBackground(t, s, "ServeListener", func() error {
			return s.ServeListener(ln, Listener{Name: "SASL_PLAINTEXT", SASL: []SASLMechanism{mech}})
		})()
		release, unhold := sync.OnceFunc(func() { close(mech.release) }), sync.OnceFunc(func() { close(held) })
		defer unhold()
		defer release() // before Shutdown, when the test fails early
		nc := ln.dial()
		defer nc.Close()
		c := newRawClient(t, nc)

		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "TEST"
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version = 2
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 3
		av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
		// The handshake, the authentication (its step held) and an
		// ApiVersions, written back to back by a pipelining client.
		written := make(chan struct{})
		go func() {
			defer close(written)
			frames := append(append(c.frame(hs, 1), c.frame(au, 2)...), c.frame(av, 3)...)
			nc.Write(frames)
		}()
		if got := c.recv(&kmsg.SASLHandshakeResponse{Version: 1}); got != 1 {
			t.Fatalf("reply %d, want 1", got)
		}
		synctest.Wait() // the server is in the held step, or reading on
		if n := inflight(s); n != 1 {
			t.Fatalf("%d requests read before authentication, while one is unanswered; want 1", n)
		}
		release()
		if got := c.recv(&kmsg.SASLAuthenticateResponse{Version: 2}); got != 2 {
			t.Fatalf("reply %d, want 2", got)
		}
		if got := c.recv(&kmsg.ApiVersionsResponse{Version: 3}); got != 3 {
			t.Fatalf("reply %d, want 3", got)
		}
		<-written

		// Authenticated: three requests are read while the first is held.
		dc := kmsg.NewPtrDescribeClusterRequest()
		go nc.Write(append(append(c.frame(dc, 4), c.frame(dc, 5)...), c.frame(dc, 6)...))
		synctest.Wait()
		if n := inflight(s); n != 3 {
			t.Fatalf("%d requests read after authentication, want 3 (pipelined)", n)
		}
		unhold()
		for want := int32(4); want <= 6; want++ {
			if got := c.recv(&kmsg.DescribeClusterResponse{}); got != want {
				t.Fatalf("reply %d, want %d", got, want)
			}
		}
	})
}

// inflight is the requests read and not yet answered on s's one connection.
func inflight(s *Server) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for c := range s.mu.conns {
		n += c.inflight.Load()
	}
	return n
}

// refuseMech fails every login.
type refuseMech struct{}

func (refuseMech) Name() string        { return "TEST" }
func (refuseMech) Start() SASLExchange { return refuseMech{} }
func (refuseMech) Step(context.Context, []byte) ([]byte, bool, string, error) {
	return nil, false, "", ErrSASLAuthFailed
}

// TestFailedAuthenticationAnswerIsDelayed: the answer to a failed SASL
// authentication is written connection.failed.authentication.delay.ms
// (Kafka's default 100 ms) after the request was read, and the
// connection closes after it, as Kafka mutes the channel and sends the
// answer and closes once the delay has passed; nothing more is read
// meanwhile. With the delay off (negative here, 0 in the node's config)
// the answer is immediate. synctest's clock makes the delay exact.
func TestFailedAuthenticationAnswerIsDelayed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration // ServerConfig.FailedAuthenticationDelay
		want  time.Duration
	}{
		{"default", 0, 100 * time.Millisecond},
		{"configured", 3 * time.Second, 3 * time.Second},
		{"off", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := NewRegistry()
				RegisterSASL(reg)
				obs := &authCounts{}
				s := NewServer(ServerConfig{FailedAuthenticationDelay: tc.delay, AuthObserver: obs}, reg, slog.New(&logSink{}))
				ln := newPipeListener()
				defer serveInBackground(t, s, "ServeListener", func() error {
					return s.ServeListener(ln, Listener{Name: "SASL_PLAINTEXT", SASL: []SASLMechanism{refuseMech{}}})
				})()
				nc := ln.dial()
				defer nc.Close()
				c := newRawClient(t, nc)
				hs := kmsg.NewPtrSASLHandshakeRequest()
				hs.Version, hs.Mechanism = 1, "TEST"
				c.send(hs, 1)
				c.recv(&kmsg.SASLHandshakeResponse{Version: 1})
				au := kmsg.NewPtrSASLAuthenticateRequest()
				au.Version = 2
				c.send(au, 2)
				start := time.Now()
				resp := &kmsg.SASLAuthenticateResponse{Version: 2}
				if got := c.recv(resp); got != 2 || resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
					t.Fatalf("reply %d, code %d; want 2, SASL_AUTHENTICATION_FAILED", got, resp.ErrorCode)
				}
				if waited := time.Since(start); waited != tc.want {
					t.Fatalf("the failed authentication was answered after %v, want %v", waited, tc.want)
				}
				c.expectClosed()
				if n := obs.failed.Load(); n != 1 {
					t.Fatalf("%d failed authentications counted, want 1", n)
				}
			})
		})
	}
}
