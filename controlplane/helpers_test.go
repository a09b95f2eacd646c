package controlplane

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startNATS starts one embedded NATS server for the test.
func startNATS(t testing.TB) *natsembed.Server {
	t.Helper()
	s, err := natsembed.Start(natsembed.Config{StoreDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, s *natsembed.Server) *nats.Conn {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// openStore opens a Store on its own connection; closed at cleanup.
func openStore(t testing.TB, nc *nats.Conn, cfg StoreConfig) *Store {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// registeredStores opens n Stores on srv, each on its own connection with
// cfg, and registers them as brokers 1 to n (stores[i] is broker i+1).
func registeredStores(t testing.TB, srv *natsembed.Server, cfg StoreConfig, n int32) []*Store {
	t.Helper()
	var stores []*Store
	for id := int32(1); id <= n; id++ {
		s := openStore(t, connect(t, srv), cfg)
		if err := s.RegisterBroker(testCtx(t), broker(id)); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	return stores
}

// testCtx is a proctest.Context of 30 s.
func testCtx(t testing.TB) context.Context { return proctest.Context(t, 30*time.Second) }

// eventually polls cond every 10 ms (proctest.Poll) until it holds, failing
// the test once timeout has passed.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := proctest.Poll(timeout, 10*time.Millisecond, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// recorder collects events from a subscription.
type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func record(s *Store) *recorder {
	r := &recorder{}
	s.Subscribe(func(e Event) {
		r.mu.Lock()
		r.evs = append(r.evs, e)
		r.mu.Unlock()
	})
	return r
}

func (r *recorder) has(match func(Event) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if match(e) {
			return true
		}
	}
	return false
}

func (r *recorder) count(match func(Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if match(e) {
			n++
		}
	}
	return n
}

func broker(id int32) Broker { return Broker{NodeID: id, Host: "127.0.0.1", Port: 9090 + id} }
