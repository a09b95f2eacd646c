package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 20 * time.Second

// logSink is a slog.Handler that keeps the formatted records for assertions.
type logSink struct {
	mu    sync.Mutex
	lines []string
	attrs []slog.Attr
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) WithGroup(string) slog.Handler            { return s }
func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &logSinkView{sink: s, attrs: append(append([]slog.Attr(nil), s.attrs...), as...)}
}
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	return s.add(nil, r)
}

func (s *logSink) add(attrs []slog.Attr, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	s.mu.Lock()
	s.lines = append(s.lines, b.String())
	s.mu.Unlock()
	return nil
}

type logSinkView struct {
	sink  *logSink
	attrs []slog.Attr
}

func (v *logSinkView) Enabled(context.Context, slog.Level) bool { return true }
func (v *logSinkView) WithGroup(string) slog.Handler            { return v }
func (v *logSinkView) WithAttrs(as []slog.Attr) slog.Handler {
	return &logSinkView{sink: v.sink, attrs: append(append([]slog.Attr(nil), v.attrs...), as...)}
}
func (v *logSinkView) Handle(_ context.Context, r slog.Record) error { return v.sink.add(v.attrs, r) }

// waitLine polls until a log line contains every one of subs.
func (s *logSink) waitLine(t *testing.T, subs ...string) string {
	t.Helper()
	var found string
	err := proctest.Poll(testTimeout, time.Millisecond, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, l := range s.lines {
			if containsAll(l, subs) {
				found = l
				return true
			}
		}
		return false
	})
	if err == nil {
		return found
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Fatalf("no log line with %q; lines:\n%s", subs, strings.Join(s.lines, "\n"))
	return ""
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// testServer is a Server on 127.0.0.1:0 with a log sink.
type testServer struct {
	*Server
	reg  *Registry
	logs *logSink
	addr string
}

func startServer(t testing.TB, cfg ServerConfig, register func(*Registry)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, ln, cfg, register)
}

func startServerOn(t testing.TB, ln net.Listener, cfg ServerConfig, register func(*Registry)) *testServer {
	t.Helper()
	reg := NewRegistry()
	if register != nil {
		register(reg)
	}
	logs := &logSink{}
	s := NewServer(cfg, reg, slog.New(logs))
	t.Cleanup(serveInBackground(t, s, "Serve", func() error { return s.Serve(ln) }))
	return &testServer{Server: s, reg: reg, logs: logs, addr: ln.Addr().String()}
}

// rawClient speaks the Kafka framing by hand.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
	f  *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return newRawClient(t, nc)
}

func newRawClient(t testing.TB, nc net.Conn) *rawClient {
	nc.SetDeadline(time.Now().Add(testTimeout))
	return &rawClient{t: t, nc: nc, br: bufio.NewReader(nc), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// frame returns req encoded as a full request frame.
func (c *rawClient) frame(req kmsg.Request, corr int32) []byte {
	return c.f.AppendRequest(nil, req, corr)
}

func (c *rawClient) send(req kmsg.Request, corr int32) {
	c.t.Helper()
	c.write(c.frame(req, corr))
}

func (c *rawClient) write(p []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(p); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// sendRefused sends a request the server must refuse by closing the
// connection, and checks that it does. The server may close as soon as it
// has read the frame's size, while a large frame is still being written:
// the write then fails with a reset or a broken pipe, which is that close.
func (c *rawClient) sendRefused(req kmsg.Request, corr int32) {
	c.t.Helper()
	if _, err := c.nc.Write(c.frame(req, corr)); err != nil {
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return
		}
		c.t.Fatalf("write: %v", err)
	}
	c.expectClosed()
}

// readFrame reads one response frame and returns its correlation id and the
// bytes after it (header tags included, if any).
func (c *rawClient) readFrame() (int32, []byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// recv reads one response into resp (whose version must be set) and returns
// its correlation id.
func (c *rawClient) recv(resp kmsg.Response) int32 {
	c.t.Helper()
	corr, body, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	if responseHeaderFlexible(resp.Key(), resp.IsFlexible()) {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("response header tag buffer missing or non-empty")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return corr
}

// expectClosed asserts that the server closes the connection without
// writing anything more.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.br.Read(b[:])
	if err == nil || n != 0 {
		c.t.Fatalf("connection still open: read %d bytes, err %v", n, err)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatalf("connection not closed before the test deadline")
	}
}

// roundTrip sends an ApiVersions v3 request and checks the answer.
func (c *rawClient) roundTrip(corr int32) {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	c.send(req, corr)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if got := c.recv(resp); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		c.t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// metadataHandler returns a Metadata handler that answers with one broker
// (the test server) and calls hook, when set, first.
func metadataReply(req *Request, host string, port int32) *kmsg.MetadataResponse {
	resp := req.Msg.(*kmsg.MetadataRequest).ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, host, port
	resp.Brokers = append(resp.Brokers, b)
	resp.ControllerID = 0
	return resp
}

// waitFor polls cond against the test deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := proctest.Poll(testTimeout, time.Millisecond, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// listenTCP listens on 127.0.0.1:0.
func listenTCP(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startServerListener is startServerOn for a named listener l (SASL, TLS).
func startServerListener(t testing.TB, ln net.Listener, cfg ServerConfig, l Listener, register func(*Registry)) *testServer {
	t.Helper()
	reg := NewRegistry()
	if register != nil {
		register(reg)
	}
	logs := &logSink{}
	s := NewServer(cfg, reg, slog.New(logs))
	t.Cleanup(serveInBackground(t, s, "ServeListener", func() error { return s.ServeListener(ln, l) }))
	return &testServer{Server: s, reg: reg, logs: logs, addr: ln.Addr().String()}
}

// authCounts is an AuthObserver that counts outcomes.
type authCounts struct{ ok, failed, expired atomic.Int32 }

func (a *authCounts) ObserveAuthentication(_, _ string, _ bool, err error) {
	if err != nil {
		a.failed.Add(1)
	} else {
		a.ok.Add(1)
	}
}
func (a *authCounts) ObserveExpiredSession(string) { a.expired.Add(1) }

// serveInBackground runs serve (s.Serve or s.ServeListener, named what in
// errors) in a goroutine and returns its stop: Shutdown of s, then a check
// that serve returned ErrServerClosed.
func serveInBackground(t testing.TB, s *Server, what string, serve func() error) (stop func()) {
	served := make(chan error, 1)
	go func() { served <- serve() }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("%s returned %v, want ErrServerClosed", what, err)
		}
	}
}
