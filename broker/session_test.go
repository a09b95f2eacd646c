package broker_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/infra/freeport"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
)

// TestLosingNATS: a node keeps serving the leadership it holds while NATS is
// briefly away; cut off for longer than its session it stops acting as
// leader; when NATS is back it reconciles and leads again.
func TestLosingNATS(t *testing.T) {
	dir := t.TempDir()
	// The server restarts on the same port: freeport never hands it out again.
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	start := func() *natsembed.Server {
		srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: port, Logger: testnode.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	n := testnode.Start(t, filepath.Join(dir, "node"), testnode.WithNATS(url), testnode.WithSession(2*time.Second))
	ctx := ctxT(t, 60*time.Second)
	if _, err := kadm.NewClient(newClient(t, n.KafkaAddr())).CreateTopic(ctx, 1, 1, nil, "held"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "leader of held-0", func() bool {
		_, err := n.Replicas().Leader("held", 0)
		return err == nil
	})
	srv.Shutdown()
	// Right after the loss the node still leads what it held.
	if _, err := n.Replicas().Leader("held", 0); err != nil {
		t.Fatalf("leadership dropped at once: %v", err)
	}
	waitFor(t, 15*time.Second, "the node steps down after its session", func() bool {
		_, err := n.Replicas().Leader("held", 0)
		return errors.Is(err, partition.ErrNotLeader)
	})
	srv = start()
	defer srv.Shutdown()
	waitFor(t, 30*time.Second, "the node leads again after reconnecting", func() bool {
		_, err := n.Replicas().Leader("held", 0)
		return err == nil
	})
}
