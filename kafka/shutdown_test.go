package kafka

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// blockingWaits registers a Metadata handler whose Wait blocks until
// release is closed or its context ends (reported on cancelled).
func blockingWaits(handled *atomic.Int32, release <-chan struct{}, cancelled chan<- error) func(*Registry) {
	return func(reg *Registry) {
		reg.Register(kmsg.Metadata, 0, 12, func(_ context.Context, req *Request) (Reply, error) {
			handled.Add(1)
			return Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
				select {
				case <-release:
					return metadataReply(req, "h", 1), nil
				case <-ctx.Done():
					cancelled <- ctx.Err()
					return nil, ctx.Err()
				}
			}}, nil
		})
	}
}

// TestShutdownCompletesInflightWait: Shutdown stops accepting at once, but
// the requests already read are answered (their Wait included) before the
// connection closes and Shutdown returns.
func TestShutdownCompletesInflightWait(t *testing.T) {
	var handled atomic.Int32
	release := make(chan struct{})
	ts := startServer(t, ServerConfig{}, blockingWaits(&handled, release, make(chan error, 2)))
	c := dialRaw(t, ts.addr)
	c.send(kmsg.NewPtrMetadataRequest(), 1)
	c.send(kmsg.NewPtrMetadataRequest(), 2)
	waitFor(t, "both requests handled", func() bool { return handled.Load() == 2 })

	done := make(chan error, 1)
	go func() { done <- ts.Shutdown(context.Background()) }()
	waitFor(t, "the listener to close", func() bool {
		nc, err := net.Dial("tcp", ts.addr)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a Wait was in flight", err)
	default:
	}

	close(release)
	for corr := int32(1); corr <= 2; corr++ {
		if got := c.recv(kmsg.NewPtrMetadataResponse()); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
	}
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := ts.Shutdown(context.Background()); err != nil { // idempotent
		t.Fatalf("second Shutdown: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}

// TestShutdownForced: when Shutdown's context ends first, connections are
// closed and the Waits' contexts cancelled.
func TestShutdownForced(t *testing.T) {
	var handled atomic.Int32
	cancelled := make(chan error, 1)
	ts := startServer(t, ServerConfig{}, blockingWaits(&handled, make(chan struct{}), cancelled))
	c := dialRaw(t, ts.addr)
	c.send(kmsg.NewPtrMetadataRequest(), 1)
	waitFor(t, "the request handled", func() bool { return handled.Load() == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait saw %v", err)
	}
	c.expectClosed()
}

// TestIdleTimeout: a connection with nothing in flight that stays silent is
// closed with a log line.
func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, ServerConfig{IdleTimeout: 50 * time.Millisecond}, nil)
	c := dialRaw(t, ts.addr)
	c.roundTrip(1)
	c.expectClosed()
	ts.logs.waitLine(t, "conn=1", "closing idle connection")
}
