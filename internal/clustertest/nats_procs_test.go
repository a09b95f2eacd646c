package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/infra/freeport"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/proctest/child"
)

// natsProcs is a 3-server NATS cluster run as child processes of this test
// binary (the chaos suite's NATS child, supervised by child.Process: TestMain calls
// chaos.MaybeRunChild), so that a test can kill -9, restart and pause
// (SIGSTOP) each server, which the in-process servers of
// natsembed.StartCluster cannot be.
type natsProcs struct {
	t     *testing.T
	procs []*child.Process
	ports []int
}

// startNATSProcs starts the three servers under dir and waits until
// JetStream can place a bucket with three replicas.
func startNATSProcs(t *testing.T, dir string) *natsProcs {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &natsProcs{t: t}
	var routes []string
	routePorts := make([]int, 3)
	for i := range 3 {
		p, err := freeport.Port()
		if err != nil {
			t.Fatal(err)
		}
		rp, err := freeport.Port()
		if err != nil {
			t.Fatal(err)
		}
		n.ports, routePorts[i] = append(n.ports, p), rp
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", rp))
	}
	for i := range 3 {
		env := []string{"SHALE_CHAOS_CHILD=nats", fmt.Sprintf("CHAOS_NATS_PORT=%d", n.ports[i]),
			"CHAOS_NATS_DIR=" + filepath.Join(dir, fmt.Sprintf("nats-%d", i+1)), fmt.Sprintf("CHAOS_NATS_NAME=blip-nats-%d", i+1),
			fmt.Sprintf("CHAOS_NATS_ROUTE_PORT=%d", routePorts[i]), "CHAOS_NATS_ROUTES=" + strings.Join(routes, ",")}
		p := child.New(child.Config{Name: fmt.Sprintf("nats-%d", i+1), Bin: self, Env: env,
			LogPath: filepath.Join(dir, fmt.Sprintf("nats-%d.log", i+1))})
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		n.procs = append(n.procs, p)
	}
	t.Cleanup(func() { // after the nodes' cleanups, registered later
		for _, p := range n.procs {
			if p.Paused() {
				_ = p.Resume()
			}
			_ = p.Terminate(10 * time.Second)
		}
	})
	n.waitJetStream(60 * time.Second)
	return n
}

// URLs is the servers' client URLs, comma-separated (a node's --nats).
func (n *natsProcs) URLs() string {
	var urls []string
	for _, p := range n.ports {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

// waitJetStream waits until a bucket with three replicas can be created
// (the servers have formed their cluster and elected a meta leader).
func (n *natsProcs) waitJetStream(d time.Duration) {
	n.t.Helper()
	var nc *nats.Conn
	if err := proctest.Poll(d, 100*time.Millisecond, func() bool {
		var err error
		nc, err = nats.Connect(n.URLs(), nats.Timeout(time.Second))
		return err == nil
	}); err != nil {
		n.t.Fatalf("NATS cluster not accepting connections: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		n.t.Fatal(err)
	}
	var last error
	if err := proctest.Poll(d, 250*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, last = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "blip_probe", Replicas: 3}); last != nil {
			return false
		}
		last = js.DeleteKeyValue(ctx, "blip_probe")
		return last == nil
	}); err != nil {
		n.t.Fatalf("NATS cluster: no 3-replica JetStream: %v (last: %v)", err, last)
	}
}

// pauseAll stops every server (SIGSTOP, every thread stopped).
func (n *natsProcs) pauseAll() {
	n.t.Helper()
	for _, p := range n.procs {
		if err := p.Pause(); err != nil {
			n.t.Fatal(err)
		}
	}
}

// resumeAll continues every server (SIGCONT).
func (n *natsProcs) resumeAll() {
	n.t.Helper()
	for _, p := range n.procs {
		if err := p.Resume(); err != nil {
			n.t.Fatal(err)
		}
	}
}

// kill kills server i (0-based) with SIGKILL.
func (n *natsProcs) kill(i int) {
	n.t.Helper()
	if err := n.procs[i].Kill(); err != nil {
		n.t.Fatal(err)
	}
}

// restart starts server i again (same port, store and routes) after kill
// or stop, and waits until it accepts connections.
func (n *natsProcs) restart(i int) {
	n.t.Helper()
	if err := n.procs[i].Start(); err != nil {
		n.t.Fatal(err)
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", n.ports[i])
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
		if err != nil {
			return false
		}
		nc.Close()
		return true
	}); err != nil {
		n.t.Fatalf("NATS server %d not accepting connections after its restart: %v", i+1, err)
	}
}

// stop stops server i cleanly (SIGTERM; SIGKILL after 10 s).
func (n *natsProcs) stop(i int) {
	n.t.Helper()
	if err := n.procs[i].Terminate(10 * time.Second); err != nil {
		n.t.Fatal(err)
	}
}
