// Package controlplanetest gives the unit tests of the packages above the
// control plane (the cold tier: tiering, tiering/coldread) a control plane
// of their own: an in-process NATS server, a Store on it with one broker
// registered, and the cluster's RemoteLog, all closed when the test ends.
// It imports only controlplane and infra/natsembed, so those packages'
// tests may use it without a cycle (controlplane's own tests cannot).
package controlplanetest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/natsembed"
)

// Open starts an in-process NATS server with its store under a temporary
// directory, opens a Store on it, registers broker 1 at 127.0.0.1:port
// and opens the RemoteLog; each is closed when tb ends, and any failure
// fails tb. Nothing is logged.
func Open(tb testing.TB, ctx context.Context, port int32) (*controlplane.Store, *controlplane.RemoteLog) {
	tb.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := natsembed.Start(natsembed.Config{StoreDir: tb.TempDir(), Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	st, err := controlplane.Open(ctx, nc, controlplane.StoreConfig{Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	if err := st.RegisterBroker(ctx, controlplane.Broker{NodeID: 1, Host: "127.0.0.1", Port: port}); err != nil {
		tb.Fatal(err)
	}
	rl, err := controlplane.OpenRemoteLog(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rl.Close)
	return st, rl
}
