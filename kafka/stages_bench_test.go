package kafka

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/metrics"
)

// metricsObserver is the broker's request observer (broker/metrics.go) in
// small: a StageObserver feeding a metrics.Registry through series resolved
// once per API key.
type metricsObserver struct {
	r     *metrics.Registry
	byKey [128]atomic.Pointer[metrics.RequestSeries]
}

// ObserveRequest is not called: the server calls ObserveStages.
func (o *metricsObserver) ObserveRequest(int16, int16, time.Duration, error) {}

func (o *metricsObserver) ObserveStages(req *Request, st RequestStages, err error) {
	s := o.byKey[req.Key].Load()
	if s == nil {
		s = o.r.RequestSeries(kmsg.NameForKey(req.Key))
		o.byKey[req.Key].Store(s)
	}
	s.Observe(req.Version, metrics.RequestStages(st), err != nil)
}

// benchConn is a client connection to a server of its own.
type benchConn struct {
	nc  net.Conn
	br  *bufio.Reader
	buf []byte // one response
}

func startBenchConn(b *testing.B, cfg ServerConfig, frame []byte) *benchConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(cfg, NewRegistry(), nil)
	go s.Serve(ln)
	b.Cleanup(func() { s.Shutdown(context.Background()) })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &benchConn{nc: nc, br: bufio.NewReader(nc)}
	c.buf = roundTrip(b, nc, c.br, frame, nil)
	return c
}

// batch writes batch (n request frames) at once and reads the n answers.
func (c *benchConn) batch(b *testing.B, batch []byte, n int) {
	if _, err := c.nc.Write(batch); err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, err := io.ReadFull(c.br, c.buf[:4]); err != nil {
			b.Fatal(err)
		}
		size := int(binary.BigEndian.Uint32(c.buf[:4]))
		if 4+size != len(c.buf) {
			b.Fatalf("response of %d bytes, want %d", size, len(c.buf)-4)
		}
		if _, err := io.ReadFull(c.br, c.buf[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripObserved measures the per-request cost of the request
// metrics: ApiVersions v3 round trips to two servers, "plain" without an
// observer (the connection reads no clock at all) and "observed" with a
// StageObserver feeding the Prometheus histograms (the stage stamps, the
// total, five stage histograms and the request counter per request). Each
// iteration runs one batch on each, alternating which goes first, so that
// a noisy machine slows both alike; it reports both times per request and
// their ratio observed/plain.
//
//   - serial: one request outstanding at a time (loopback latency dominates);
//
//   - pipelined: 32 requests in one write, then their 32 answers, so that
//     the server's CPU per request sets the time.
//
//     go test -run '^$' -bench RoundTripObserved -benchmem -count 5 ./kafka
func BenchmarkRoundTripObserved(b *testing.B) {
	req := versioned(kmsg.NewPtrApiVersionsRequest(), 3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bench", "1.0"
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 7)
	plain := startBenchConn(b, ServerConfig{}, frame)
	observed := startBenchConn(b, ServerConfig{Observer: &metricsObserver{r: metrics.New(nil)}}, frame)
	for _, mode := range []struct {
		name  string
		depth int
	}{{"serial", 1}, {"pipelined", 32}} {
		b.Run(mode.name, func(b *testing.B) {
			batch := bytes.Repeat(frame, mode.depth)
			var tPlain, tObserved time.Duration
			first := false
			for b.Loop() {
				first = !first
				conns := [2]*benchConn{plain, observed}
				if !first {
					conns[0], conns[1] = observed, plain
				}
				t0 := time.Now()
				conns[0].batch(b, batch, mode.depth)
				t1 := time.Now()
				conns[1].batch(b, batch, mode.depth)
				t2 := time.Now()
				if first {
					tPlain, tObserved = tPlain+t1.Sub(t0), tObserved+t2.Sub(t1)
				} else {
					tObserved, tPlain = tObserved+t1.Sub(t0), tPlain+t2.Sub(t1)
				}
			}
			reqs := float64(b.N * mode.depth)
			b.ReportMetric(float64(tPlain)/reqs, "plain-ns/req")
			b.ReportMetric(float64(tObserved)/reqs, "observed-ns/req")
			b.ReportMetric(float64(tObserved)/float64(tPlain), "observed/plain")
		})
	}
}
