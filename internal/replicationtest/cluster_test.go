package replicationtest

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/internal/proctest"
)

// cluster is three shale processes on one NATS server run in the test
// process, each reaching NATS through its own proxy (proctest.Cluster),
// and the one replicated topic a test works on.
type cluster struct {
	*proctest.Cluster
	t     testing.TB
	nodes []*node // node i+1 is nodes[i]
	topic string
	parts int32
}

// startCluster starts NATS and nodes 1..3 (each reaching NATS through its
// own proctest.Proxy), waits until each is ready and
// the controller sees all three, and creates topic with parts partitions,
// replication factor 3 and min.insync.replicas=2.
func startCluster(t testing.TB, topic string, parts int32, extra ...string) *cluster {
	t.Helper()
	return startClusterEnv(t, topic, parts, nil, extra...)
}

// startClusterEnv is startCluster with env (KEY=value pairs,
// fault-injection hooks) added to every node's environment.
func startClusterEnv(t testing.TB, topic string, parts int32, env []string, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, topic: topic, parts: parts, Cluster: proctest.NewCluster(t, shaleBin,
		proctest.ClusterName("replicationtest"), proctest.NATSProxies(), proctest.NodeEnv(env...), proctest.NodeFlags(extra...))}
	for id := int32(1); id <= 3; id++ {
		c.nodes = append(c.nodes, &node{Node: c.NewNode(id), id: id})
	}
	c.Start(1, 2, 3)
	ctx := proctest.Context(t, time.Minute)
	adm := kadm.NewClient(c.nodes[0].Client())
	two := "2"
	if _, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &two}, topic); err != nil {
		t.Fatal(err)
	}
	c.waitSettled(60 * time.Second)
	return c
}

// node returns node id.
func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

// live returns the nodes with a live run that is neither paused nor cut
// off from the control plane.
func (c *cluster) live() []*node {
	var out []*node
	for _, id := range c.LiveIDs() {
		out = append(out, c.node(id))
	}
	return out
}

// leaderOf returns the leader of partition p that the live nodes agree on,
// and its epoch, once it is live and has logged taking the role, failing
// the test after d. A leader other than the excluded ids is required.
func (c *cluster) leaderOf(p int32, d time.Duration, exclude ...int32) (int32, int32) {
	c.t.Helper()
	pv := c.WaitPartition(c.topic, p, d, func(pv proctest.Partition) bool {
		return pv.Leader >= 1 && !slices.Contains(exclude, pv.Leader)
	})
	return pv.Leader, pv.Epoch
}

// waitSettled waits until every node is live, every partition has a live
// leader, and every ISR holds all three nodes: the state after which a
// single node may be lost without losing acks=all writes.
func (c *cluster) waitSettled(d time.Duration) {
	c.t.Helper()
	c.WaitTopic(c.topic, int(c.parts), []int32{1, 2, 3}, d, func(pv proctest.Partition) bool {
		return slices.Equal(pv.ISR, []int32{1, 2, 3})
	})
}
