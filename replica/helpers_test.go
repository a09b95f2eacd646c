package replica_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
)

// replicatedTopic starts n nodes with opts and, once the first sees all n
// brokers, creates topic on them: parts partitions of n replicas each,
// min.insync.replicas=2. It returns the nodes, a proctest.Context of
// timeout, an admin client and a client that produces to topic with
// acks=all, both on node 1.
func replicatedTopic(t *testing.T, n int, topic string, parts int32, timeout time.Duration, opts ...testnode.Option) ([]*broker.Node, context.Context, *kadm.Client, *kgo.Client) {
	t.Helper()
	nodes, _ := testnode.StartCluster(t, t.TempDir(), n, opts...)
	ctx := proctest.Context(t, timeout)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, fmt.Sprintf("%d brokers", n), func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == n
	})
	two := "2"
	if _, err := adm.CreateTopic(ctx, parts, int16(n), map[string]*string{"min.insync.replicas": &two}, topic); err != nil {
		t.Fatal(err)
	}
	prod := testnode.Client(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	return nodes, ctx, adm, prod
}

// followNode1 makes partition 0 of topic, created through st2 (node 2's
// store), name node 1 its leader, with replicas and ISR {1, 2}, and runs
// node 2's replica.Manager on st2 with its logs under dir/n2. It returns
// the manager and node 2's replica, which must be an open follower.
func followNode1(t *testing.T, ctx context.Context, st2 *controlplane.Store, dir, topic string) (*replica.Manager, *partition.Replica) {
	t.Helper()
	ps, ok := st2.Partition(topic, 0)
	if !ok {
		t.Fatal("no partition state after CreateTopic")
	}
	ps.Replicas, ps.ISR, ps.Leader = []int32{1, 2}, []int32{1, 2}, 1
	if _, err := st2.UpdatePartition(ctx, ps); err != nil {
		t.Fatal(err)
	}
	m := replica.New(managerConfig(2, "", filepath.Join(dir, "n2", "logs")), st2)
	runManager(t, m)
	follower, ok := m.Local(topic, 0)
	if !ok || follower.IsLeader() {
		t.Fatalf("node 2 replica of %s-0: open %v; want an open follower", topic, ok)
	}
	return m, follower
}

// cleanlyStoppedDir returns dir/n1, made the data directory of a node that
// stopped cleanly (broker.CleanShutdownFile), so that the node started on
// it registers trusted with its log (KIP-966).
func cleanlyStoppedDir(t *testing.T, dir string) string {
	t.Helper()
	n1dir := filepath.Join(dir, "n1")
	if err := os.MkdirAll(n1dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n1dir, broker.CleanShutdownFile), []byte("clean shutdown\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return n1dir
}

// produceToNode1 writes 50 records tagged tag to partition 0 of topic on
// n, node 1, with acks=1, and returns the log end of n's replica, which
// must lead.
func produceToNode1(t *testing.T, ctx context.Context, n *broker.Node, topic, tag string) int64 {
	t.Helper()
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := cl.ProduceSync(ctx, testnode.Records(topic, 50, tag)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader := testnode.Replica(n, topic, 0)
	if leader == nil || !leader.IsLeader() {
		t.Fatalf("node 1 does not lead %s-0", topic)
	}
	return leader.Log().LogEndOffset()
}

// natsStore starts a NATS server with its store under dir and opens a
// control-plane store on it, registering broker id (at a port nothing
// dials) for CreateTopic to place replicas on; both close at cleanup.
func natsStore(t *testing.T, ctx context.Context, dir string, id int32) *controlplane.Store {
	t.Helper()
	return natsStores(t, ctx, dir, id)[0]
}

// natsStores is natsStore for several brokers on the same NATS server,
// each registered through its own store and connection.
func natsStores(t *testing.T, ctx context.Context, dir string, ids ...int32) []*controlplane.Store {
	t.Helper()
	srv := testnode.StartNATS(t, dir)
	var out []*controlplane.Store
	for _, id := range ids {
		out = append(out, storeOn(t, ctx, func() (*nats.Conn, error) { return srv.Connect() }, id))
	}
	return out
}

func storeOn(t *testing.T, ctx context.Context, connect func() (*nats.Conn, error), id int32) *controlplane.Store {
	t.Helper()
	nc, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := controlplane.Open(ctx, nc, controlplane.StoreConfig{Logger: testnode.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterBroker(ctx, controlplane.Broker{NodeID: id, Host: "127.0.0.1", Port: 1}); err != nil {
		t.Fatal(err)
	}
	return st
}

// managerConfig is a test replica.Manager's config: node id (of process
// incarnation, "" for none) with its logs in logsDir, one fetcher polling
// for at most 100 ms.
func managerConfig(id int32, incarnation, logsDir string) replica.Config {
	return replica.Config{NodeID: id, Incarnation: incarnation, LogsDir: logsDir,
		TopicDefaults: map[string]string{}, ReplicaLagTimeMax: 30 * time.Second, Logger: testnode.Logger(),
		Fetch: replica.FetchConfig{Fetchers: 1, MaxWait: 100 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20},
	}
}

// runManager reconciles m once, then runs it until the test ends and
// closes it (an error from Close fails the test).
func runManager(t *testing.T, m *replica.Manager) {
	t.Helper()
	if err := m.Reconcile(); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(runCtx) })
	t.Cleanup(func() {
		stop()
		wg.Wait()
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
}
