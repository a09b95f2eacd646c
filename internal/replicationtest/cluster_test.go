package replicationtest

import (
	"context"
	"fmt"
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

// partitionView is one partition as a node's Metadata shows it.
type partitionView struct {
	leader, epoch int32
	isr           []int32
}

// viewFrom asks n (and only n) for the topic's partitions.
func (c *cluster) viewFrom(ctx context.Context, n *node) (map[int32]partitionView, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := n.Metadata(rctx, c.topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]partitionView{}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != c.topic {
			continue
		}
		if t.ErrorCode != 0 {
			return nil, fmt.Errorf("topic %s: error %d", c.topic, t.ErrorCode)
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return nil, fmt.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			out[p.Partition] = partitionView{leader: p.Leader, epoch: p.LeaderEpoch, isr: isr}
		}
	}
	if int32(len(out)) != c.parts {
		return nil, fmt.Errorf("topic %s: %d partitions, want %d", c.topic, len(out), c.parts)
	}
	return out, nil
}

// leaderOf returns the leader of partition p that the live nodes agree on,
// and its epoch, once it is live and has logged taking the role, failing
// the test after d. A leader other than the excluded ids is required.
func (c *cluster) leaderOf(p int32, d time.Duration, exclude ...int32) (int32, int32) {
	c.t.Helper()
	ctx := proctest.Context(c.t, d+5*time.Second)
	var leader, epoch int32
	var last string
	err := proctest.WaitFor(d, func() bool {
		leader, epoch = -1, -1
		for _, n := range c.live() {
			v, err := c.viewFrom(ctx, n)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", n.id, err)
				return false
			}
			pv := v[p]
			if leader >= 0 && (pv.leader != leader || pv.epoch != epoch) {
				last = fmt.Sprintf("nodes disagree on partition %d: %d@%d and %d@%d", p, leader, epoch, pv.leader, pv.epoch)
				return false
			}
			leader, epoch = pv.leader, pv.epoch
		}
		if leader < 1 || int(leader) > len(c.nodes) || !c.Live(leader) || slices.Contains(exclude, leader) {
			last = fmt.Sprintf("partition %d leader %d", p, leader)
			return false
		}
		if !c.node(leader).TookRole("became leader", c.topic, p, epoch) {
			last = fmt.Sprintf("node %d has not logged becoming leader of %d in epoch %d", leader, p, epoch)
			return false
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("partition %d: no agreed live leader after %v: %s", p, d, last)
	}
	return leader, epoch
}

// waitSettled waits until every node is live, every partition has a live
// leader, and every ISR holds all three nodes: the state after which a
// single node may be lost without losing acks=all writes.
func (c *cluster) waitSettled(d time.Duration) {
	c.t.Helper()
	ctx := proctest.Context(c.t, d+5*time.Second)
	var last string
	err := proctest.WaitFor(d, func() bool {
		for _, n := range c.nodes {
			if !n.Alive() {
				last = fmt.Sprintf("node %d not live", n.id)
				return false
			}
			v, err := c.viewFrom(ctx, n)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", n.id, err)
				return false
			}
			for p, pv := range v {
				if !slices.Equal(pv.isr, []int32{1, 2, 3}) || pv.leader < 1 {
					last = fmt.Sprintf("node %d: partition %d leader %d isr %v", n.id, p, pv.leader, pv.isr)
					return false
				}
				if !c.node(pv.leader).TookRole("became leader", c.topic, p, pv.epoch) {
					last = fmt.Sprintf("partition %d: node %d not yet leader in epoch %d", p, pv.leader, pv.epoch)
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("cluster not settled after %v: %s", d, last)
	}
}
