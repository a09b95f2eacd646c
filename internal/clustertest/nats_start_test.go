package clustertest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
)

// natsStartPause is how long the NATS servers are paused (SIGSTOP) while
// something starts against them: longer than the JetStream client's
// default call timeout (5 s) and the NATS client's connect timeout (2 s),
// so that a start bounded by either of them fails.
const natsStartPause = 7 * time.Second

// TestStartWaitsForAPausedNATS starts the control plane and then a node
// while their NATS cluster is paused. Both used to give up: the store's
// first bucket after the JetStream client's 5 s default ("control plane:
// bucket shale_brokers: context deadline exceeded", how a node under a
// loaded test machine failed its start), the node at its first connect.
// Both now wait, within initial_broker_registration_timeout.
func TestStartWaitsForAPausedNATS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := startNATSProcs(t, filepath.Join(dir, "nats"))

	// The store, opened while the servers are paused after the connect.
	nc, err := nats.Connect(n.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	n.pauseAll()
	opened := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := controlplane.Open(ctx, nc, controlplane.StoreConfig{Replicas: 3})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	time.Sleep(natsStartPause) // the fault: NATS does not answer meanwhile
	n.resumeAll()
	if err := <-opened; err != nil {
		t.Fatalf("the store did not open once NATS answered again: %v", err)
	}

	// A node started while the servers are paused: it connects and
	// registers once they answer.
	n.pauseAll()
	nd := newNode(t, dir, 1, n.URLs(), "--nats-replicas", "3")
	nd.Start()
	// The pause lasts natsStartPause; the node must outlive it (a start
	// that gives up is seen as soon as it exits).
	if proctest.Poll(natsStartPause, 100*time.Millisecond, func() bool { return !nd.Alive() }) == nil {
		n.resumeAll()
		t.Fatalf("the node exited while NATS was paused:\n%s", nd.Tail())
	}
	n.resumeAll()
	nd.WaitReady()
	ctx := proctest.Context(t, 30*time.Second)
	adm := kadm.NewClient(nd.Client())
	if err := proctest.WaitFor(30*time.Second, func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 1 && m.Controller == 1
	}); err != nil {
		t.Fatalf("the node is not registered, or not the controller: %v", err)
	}
}
