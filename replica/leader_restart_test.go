package replica_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestLeaderRestartOnNewAddress: the leader of a partition stops cleanly
// while it is the partition's only live in-sync replica (so it keeps the
// leadership) and starts again at another Kafka port. Its new registration
// is a new incarnation: the controller must give the partition a new
// leader epoch, as Kafka fences a broker that registers again, and the
// follower, which followed it all along, must fetch from its new address.
// Before, the epoch stayed and the follower's fetcher kept dialing the old
// port, so it never saw a record written after the restart.
//
// Node 2 is a replica.Manager on its own control-plane store, not
// registered (so node 1's controlled shutdown finds no other live ISR
// member); node 1 is a whole node, run twice.
func TestLeaderRestartOnNewAddress(t *testing.T) {
	dir := t.TempDir()
	srv := testnode.StartNATS(t, dir)
	ctx := proctest.Context(t, 120*time.Second)

	// CreateTopic places replicas on live brokers: node 2 registers for
	// that only.
	st2 := storeOn(t, ctx, func() (*nats.Conn, error) { return srv.Connect() }, 2)
	if _, err := st2.CreateTopic(ctx, "moved", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := st2.DeregisterBroker(ctx); err != nil {
		t.Fatal(err)
	}
	_, follower := followNode1(t, ctx, st2, dir, "moved")

	// A node that stopped cleanly: trusted with its log (KIP-966).
	n1dir := cleanlyStoppedDir(t, dir)
	opts := []testnode.Option{testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(1),
		func(c *config.Broker) { c.ReplicaLagTimeMax = 10 * time.Minute }}
	n1 := testnode.Start(t, n1dir, opts...)
	end := produceToNode1(t, ctx, n1, "moved", "first")
	proctest.Eventually(t, 20*time.Second, "the follower to copy the leader's log", func() bool {
		return follower.Log().LogEndOffset() == end
	})
	before, _ := st2.Partition("moved", 0)
	oldAddr := n1.KafkaAddr()
	if err := n1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ps, _ := st2.Partition("moved", 0); ps.Leader != 1 {
		t.Fatalf("node 1's clean stop moved the leadership (%+v): the test needs it kept", ps)
	}

	n1 = testnode.Start(t, n1dir, opts...)
	if n1.KafkaAddr() == oldAddr {
		t.Fatalf("node 1 restarted at its old address %s", oldAddr)
	}
	proctest.Eventually(t, 20*time.Second, "a new leader epoch for the re-registered leader", func() bool {
		ps, _ := st2.Partition("moved", 0)
		return ps.Leader == 1 && ps.LeaderEpoch > before.LeaderEpoch
	})
	end = produceToNode1(t, ctx, n1, "moved", "second")
	proctest.Eventually(t, 20*time.Second, "the follower to fetch from the leader's new address", func() bool {
		return follower.Log().LogEndOffset() == end
	})
}
