package controlplane

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shale-io/shale/infra/freeport"
	"github.com/shale-io/shale/infra/natsembed"
)

// logRecorder is a slog handler keeping each record's message and
// attributes as one line.
type logRecorder struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newLogRecorder() logRecorder { return logRecorder{mu: &sync.Mutex{}, lines: new([]string)} }

func (h logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	h.mu.Lock()
	*h.lines = append(*h.lines, b.String())
	h.mu.Unlock()
	return nil
}
func (h logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], as...)
	return h
}
func (h logRecorder) WithGroup(string) slog.Handler { return h }

// has reports whether a line holds every one of parts.
func (h logRecorder) has(parts ...string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range *h.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestConnMonitorAcrossNATSRestart: a node's connection made with the
// monitor's options logs its loss and its reconnection through the node's
// logger (with its attributes) and counts them, and the Store's watches
// deliver again once the server is back (here with the same store, as
// after a NATS restart): the supervisor finds a watch whose consumer the
// restart lost stalled, if the NATS client has not recreated it first.
func TestConnMonitorAcrossNATSRestart(t *testing.T) {
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func() *natsembed.Server {
		s, err := natsembed.Start(natsembed.Config{StoreDir: dir, Port: port, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		return s
	}
	srv := start()
	rec := newLogRecorder()
	mon := NewConnMonitor(slog.New(rec).With("node", 5))
	mon.checkInterval = 100 * time.Millisecond
	nc, err := nats.Connect("nats://127.0.0.1:"+strconv.Itoa(port),
		append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, mon.Options()...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st := openStore(t, nc, StoreConfig{Monitor: mon})
	// Closed before the second server stops: unsubscribing a watch with
	// the server away waits for the consumer's deletion to time out.
	defer st.Close()

	srv.Shutdown()
	eventually(t, 10*time.Second, "the loss logged", func() bool {
		return rec.has("WARN NATS connection lost", "node=5", "component=nats")
	})
	srv = start()
	eventually(t, 20*time.Second, "the reconnection logged", func() bool {
		return rec.has("INFO NATS reconnected", "node=5")
	})
	if s := mon.Stats(); s.Disconnects != 1 || s.Reconnects != 1 {
		t.Errorf("stats %+v, want one disconnect and one reconnect", s)
	}
	writer := openStore(t, connect(t, srv), StoreConfig{})
	if err := writer.RegisterBroker(testCtx(t), broker(3)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "broker 3 through the restarted server", func() bool {
		for _, b := range st.Brokers() {
			if b.NodeID == 3 {
				return true
			}
		}
		return false
	})
	// The restart lost the watches' consumers; each watch asked right after
	// the reconnection instead of waiting for missed heartbeats (5 s each
	// on a server that is not in a cluster).
	if !rec.has("WARN control-plane watch re-established", "reason=its consumer did not survive the NATS reconnection") {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		t.Errorf("no watch re-established after the reconnection; log:\n%s", strings.Join(*rec.lines, "\n"))
	}
}
