package replica_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/replica"
)

// TestFollowerStartsWhenLeaderRegistersLater is issue 15 item 5: a follower
// whose partition state names a leader that is not yet in its broker cache
// (the partition key was written, or reached this node's cache, before the
// leader's broker key) starts fetching once the leader registers. Nothing
// else changes in between: no partition or topic event, so only the
// leader's BrokerUp can start the fetcher. Before the fix the follower
// never fetched (until some unrelated partition change).
//
// Node 2 is a replica.Manager on its own control-plane store; node 1 is a
// whole node started after the partition state already names it leader.
func TestFollowerStartsWhenLeaderRegistersLater(t *testing.T) {
	dir := t.TempDir()
	srv := testnode.StartNATS(t, dir)
	ctx := proctest.Context(t, 90*time.Second)

	// Node 2 is registered (the leader never dials its followers: any port).
	st2 := storeOn(t, ctx, func() (*nats.Conn, error) { return srv.Connect() }, 2)
	if _, err := st2.CreateTopic(ctx, "late", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	ps, ok := st2.Partition("late", 0)
	if !ok {
		t.Fatal("no partition state after CreateTopic")
	}
	// The partition state names node 1, not registered yet, as its leader.
	ps.Replicas, ps.ISR, ps.Leader = []int32{1, 2}, []int32{1, 2}, 1
	if _, err := st2.UpdatePartition(ctx, ps); err != nil {
		t.Fatal(err)
	}

	m := replica.New(managerConfig(2, "", filepath.Join(dir, "n2", "logs")), st2)
	runManager(t, m)
	follower, ok := m.Local("late", 0)
	if !ok || follower.IsLeader() {
		t.Fatalf("node 2 replica of late-0: open %v; want an open follower", ok)
	}
	if fs := m.Fetchers(); len(fs) != 0 {
		t.Fatalf("fetchers %+v before the leader is known; want none", fs)
	}

	// Node 1 registers and leads, as a node that stopped cleanly: without
	// the clean-shutdown record it would register with UncleanStart and the
	// controller would rightly elect the trusted ISR member, node 2 (KIP-966;
	// controlplane/eligibility.go), whose Kafka port this test does not run.
	n1dir := filepath.Join(dir, "n1")
	if err := os.MkdirAll(n1dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n1dir, broker.CleanShutdownFile), []byte("clean shutdown\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its ISR checks (half of
	// replica_lag_time_max) would change the partition state, and with it
	// start the fetcher by another path: keep them out of the test's time.
	n1 := testnode.Start(t, n1dir, testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(1),
		func(c *config.Broker) { c.ReplicaLagTimeMax = 10 * time.Minute })
	cl := testnode.Client(t, n1.KafkaAddr(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	recs := testnode.Records("late", 50, "late")
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader := testnode.Replica(n1, "late", 0)
	if leader == nil || !leader.IsLeader() {
		t.Fatal("node 1 does not lead late-0")
	}
	end := leader.Log().LogEndOffset()
	proctest.Eventually(t, 20*time.Second, "the follower to copy the leader's log", func() bool {
		return follower.Log().LogEndOffset() == end
	})
	if ps, _ := st2.Partition("late", 0); ps.Leader != 1 || ps.LeaderEpoch != 0 {
		t.Fatalf("partition state changed during the test (%+v): the fetcher may have started on that change", ps)
	}
}
