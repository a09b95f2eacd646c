package kafka

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// smallSpan is a range of at most 30,000 bytes: it fits in the write buffer.
func smallSpan(corr int32) (off int64, n int) {
	return int64(corr) * 7919 % (900 << 10), 1 + int(corr)*997%30_000
}

// A file range that fits in the write buffer is read into it (pread), not
// sent with sendfile; the bytes and the shared file's position are right.
// A file shorter than such a range closes the connection like a large one.
func TestSendFileSmallRangesAreCopied(t *testing.T) {
	fx := newSendFileFixture(t)
	ts := startServer(t, ServerConfig{}, func(reg *Registry) {
		reg.Register(kmsg.Fetch, 4, 16, func(_ context.Context, req *Request) (Reply, error) {
			off, n := smallSpan(req.CorrelationID)
			if req.ClientID == "short-file" {
				off = int64(len(fx.data)) - 10
			}
			return Reply{Body: &fileBody{prefix: []byte("head"), suffix: []byte("tail"), f: fx.f, off: off, n: n}}, nil
		})
	})
	before := zeroCopyBytes.Load()
	c := dialRaw(t, ts.addr)
	for corr := int32(1); corr <= 40; corr++ {
		c.send(versioned(kmsg.NewPtrFetchRequest(), 4), corr)
		got, body, err := c.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		off, n := smallSpan(corr)
		want := bytes.Join([][]byte{[]byte("head"), fx.data[off : off+int64(n)], []byte("tail")}, nil)
		if got != corr || !bytes.Equal(body, want) {
			t.Fatalf("corr %d: got corr %d, %d body bytes, want %d equal to the file's", corr, got, len(body), len(want))
		}
	}
	if sent := zeroCopyBytes.Load() - before; sent != 0 {
		t.Fatalf("%d bytes of small ranges went through sendfile", sent)
	}
	if pos, _ := fx.f.Seek(0, io.SeekCurrent); pos != 0 {
		t.Fatalf("the shared file's position moved to %d", pos)
	}

	short := dialRaw(t, ts.addr)
	short.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID("short-file"))
	short.send(versioned(kmsg.NewPtrFetchRequest(), 4), 5)
	short.expectClosed()
	ts.logs.waitLine(t, "write failure", "unexpected EOF")
}

// memBody is a body written from memory, the peer of a fileBody.
type memBody struct{ b []byte }

func (m memBody) Len() int                        { return len(m.b) }
func (m memBody) WriteTo(w *ResponseWriter) error { _, err := w.Write(m.b); return err }

// BenchmarkFileBodyRoundTrip measures a Fetch-shaped round trip whose body
// is a 4 KiB file range (a follower's or a caught-up consumer's fetch of a
// few batches) against the same bytes written from memory, one request
// outstanding: the ratio file/memory is the cost of reading the range.
//
//	go test -run '^$' -bench FileBodyRoundTrip ./kafka
func BenchmarkFileBodyRoundTrip(b *testing.B) {
	const n = 4 << 10
	fx := newSendFileFixture(b)
	for _, kind := range []string{"file", "memory"} {
		b.Run(kind, func(b *testing.B) {
			ts := startServer(b, ServerConfig{}, func(reg *Registry) {
				reg.Register(kmsg.Fetch, 4, 16, func(_ context.Context, req *Request) (Reply, error) {
					if kind == "memory" {
						return Reply{Body: memBody{fx.data[4096 : 4096+n+1]}}, nil
					}
					return Reply{Body: &fileBody{f: fx.f, off: 4096, n: n, suffix: []byte{0}}}, nil
				})
			})
			c := dialRaw(b, ts.addr)
			frame := c.frame(versioned(kmsg.NewPtrFetchRequest(), 4), 1)
			b.SetBytes(n)
			for b.Loop() {
				c.write(frame)
				if _, _, err := c.readFrame(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
