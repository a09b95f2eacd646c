package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fileBody is a BodyWriter: prefix, n bytes of f from off, suffix.
type fileBody struct {
	prefix, suffix []byte
	f              *os.File
	off            int64
	n              int
	lenAdjust      int // lie about Len, for the mismatch test
}

func (b *fileBody) Len() int { return len(b.prefix) + b.n + len(b.suffix) + b.lenAdjust }

func (b *fileBody) WriteTo(w *ResponseWriter) error {
	if _, err := w.Write(b.prefix); err != nil {
		return err
	}
	if err := w.SendFile(b.f, b.off, b.n); err != nil {
		return err
	}
	_, err := w.Write(b.suffix)
	return err
}

// pipeListener hands out the server ends of net.Pipe connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-l.done:
		server.Close()
	}
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// sendFileFixture is a 1 MiB file of random bytes and a Fetch handler that
// answers each request with a fileBody over a range chosen by its
// correlation id.
type sendFileFixture struct {
	data []byte
	f    *os.File
}

func newSendFileFixture(t testing.TB) *sendFileFixture {
	data := make([]byte, 1<<20)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &sendFileFixture{data: data, f: f}
}

// span is the file range answered for correlation id corr.
func span(corr int32) (off int64, n int) {
	return int64(corr) * 7919 % (300 << 10), 100<<10 + int(corr%16)*37<<10
}

func (fx *sendFileFixture) register(reg *Registry) {
	reg.Register(kmsg.Fetch, 4, 16, func(_ context.Context, req *Request) (Reply, error) {
		off, n := span(req.CorrelationID)
		body := &fileBody{prefix: []byte("head"), suffix: []byte("tail"), f: fx.f, off: off, n: n}
		switch req.ClientID {
		case "short-file":
			body.off = int64(len(fx.data)) - 10
		case "lying-len":
			body.lenAdjust = 1
		}
		return Reply{Body: body}, nil
	})
}

func (fx *sendFileFixture) want(corr int32) []byte {
	off, n := span(corr)
	return bytes.Join([][]byte{[]byte("head"), fx.data[off : off+int64(n)], []byte("tail")}, nil)
}

// exchange sends Fetch requests on c and checks each answer byte for byte.
func (fx *sendFileFixture) exchange(c *rawClient, corrs []int32) error {
	for i, corr := range corrs {
		// Write, not send: exchange may run off the test goroutine.
		if _, err := c.nc.Write(c.frame(versioned(kmsg.NewPtrFetchRequest(), int16(4+i%13)), corr)); err != nil { // v12+ is flexible
			return err
		}
	}
	for i, corr := range corrs {
		got, body, err := c.readFrame()
		if err != nil {
			return err
		}
		if flexible := 4+i%13 >= 12; flexible {
			if body[0] != 0 {
				return fmt.Errorf("corr %d: header tag buffer %d", corr, body[0])
			}
			body = body[1:]
		}
		if got != corr || !bytes.Equal(body, fx.want(corr)) {
			return fmt.Errorf("corr %d: got corr %d and %d body bytes that differ from the file", corr, got, len(body))
		}
	}
	return nil
}

func TestSendFileTCP(t *testing.T) {
	fx := newSendFileFixture(t)
	ts := startServer(t, ServerConfig{}, fx.register)
	before := zeroCopyBytes.Load()

	// Several connections share the one *os.File concurrently.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for conn := range 4 {
		c := dialRaw(t, ts.addr)
		wg.Go(func() {
			corrs := []int32{int32(conn * 10), int32(conn*10 + 1), int32(conn*10 + 2), int32(conn*10 + 3)}
			errs <- fx.exchange(c, corrs)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if pos, _ := fx.f.Seek(0, io.SeekCurrent); pos != 0 {
		t.Fatalf("the shared file's position moved to %d", pos)
	}
	if sent := zeroCopyBytes.Load() - before; sent < 16*100<<10 {
		t.Fatalf("only %d bytes went through sendfile", sent)
	}
}

func TestSendFilePipeFallback(t *testing.T) {
	fx := newSendFileFixture(t)
	pl := newPipeListener()
	ts := startServerOn(t, pl, ServerConfig{}, fx.register)
	before := zeroCopyBytes.Load()
	c := newRawClient(t, pl.dial())
	defer c.nc.Close()
	if err := fx.exchange(c, []int32{0, 1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if sent := zeroCopyBytes.Load() - before; sent != 0 {
		t.Fatalf("%d bytes went through sendfile on a net.Pipe", sent)
	}
	_ = ts
}

// TestBodyFailuresClose: a file shorter than the range, or a BodyWriter
// that writes other than its Len, closes the connection with a log line, on
// TCP and on the copy fallback.
func TestBodyFailuresClose(t *testing.T) {
	for _, transport := range []string{"tcp", "pipe"} {
		for _, tc := range []struct{ clientID, log string }{
			{"short-file", "unexpected EOF"},
			{"lying-len", "body length mismatch"},
		} {
			t.Run(transport+"/"+tc.clientID, func(t *testing.T) {
				fx := newSendFileFixture(t)
				var c *rawClient
				var ts *testServer
				if transport == "tcp" {
					ts = startServer(t, ServerConfig{}, fx.register)
					c = dialRaw(t, ts.addr)
				} else {
					pl := newPipeListener()
					ts = startServerOn(t, pl, ServerConfig{}, fx.register)
					c = newRawClient(t, pl.dial())
					defer c.nc.Close()
				}
				c.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(tc.clientID))
				c.send(versioned(kmsg.NewPtrFetchRequest(), 4), 1)
				// The frame may be partly written before the failure; read
				// until the close.
				for {
					if _, _, err := c.readFrame(); err != nil {
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() {
							t.Fatal("connection not closed")
						}
						break
					}
				}
				ts.logs.waitLine(t, "conn=1", "write failure", tc.log)
			})
		}
	}
}
