package groupstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
)

// cluster is three shale processes (node ids 1..3) on one NATS server run
// in the test process.
type cluster struct {
	*proctest.Cluster
	t testing.TB
}

// startCluster starts NATS and three nodes with proctest's default flags
// (a 2 s broker session and controller lease, a 3 s replica.lag.time.max),
// and waits until every node is ready and the controller sees all three.
// settings are flag and value pairs that replace those defaults or add to
// them.
func startCluster(t testing.TB, settings ...string) *cluster {
	t.Helper()
	return &cluster{t: t, Cluster: proctest.StartCluster(t, shaleBin, []int32{1, 2, 3},
		proctest.ClusterName("groupstest"), proctest.NodeFlags(settings...))}
}

// node returns node id (1-based).
func (c *cluster) node(id int32) *proctest.Node { return c.Node(id) }

// request sends req to node id only and returns its answer.
func (c *cluster) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if !slices.Contains(c.IDs(), id) {
		return nil, fmt.Errorf("no node %d", id)
	}
	n := c.node(id)
	if !n.Alive() || n.Paused() {
		return nil, fmt.Errorf("node %d is not running", id)
	}
	seeds := n.Client().SeedBrokers()
	if len(seeds) == 0 {
		return nil, errors.New("no seed broker")
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return seeds[0].Request(rctx, req)
}

// coordinator asks the running nodes, in turn, for group's coordinator.
func (c *cluster) coordinator(ctx context.Context, group string) (int32, error) {
	var last error = errors.New("no running node")
	for _, id := range c.IDs() {
		// The client sends the highest version both sides support: fill
		// the fields of v0-v3 and v4, read the answer of either.
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
		resp, err := c.request(ctx, id, req)
		if err != nil {
			last = err
			continue
		}
		r := resp.(*kmsg.FindCoordinatorResponse)
		code, id := r.ErrorCode, r.NodeID
		if len(r.Coordinators) == 1 {
			code, id = r.Coordinators[0].ErrorCode, r.Coordinators[0].NodeID
		} else if r.Version >= 4 {
			last = fmt.Errorf("FindCoordinator v%d answered %d coordinators", r.Version, len(r.Coordinators))
			continue
		}
		if err := kerr.ErrorForCode(code); err != nil {
			last = err
			continue
		}
		return id, nil
	}
	return -1, last
}

// partition asks node id, when it runs, for topic's partition p.
func (c *cluster) partition(ctx context.Context, id int32, topic string, p int32) (proctest.Partition, error) {
	if n := c.node(id); !n.Alive() || n.Paused() {
		return proctest.Partition{}, fmt.Errorf("node %d is not running", id)
	}
	return c.node(id).Partition(ctx, topic, p)
}

// waitInSync waits until every running node sees topic-p with a running
// leader that has taken the role and want in-sync replicas, and returns
// the leader.
func (c *cluster) waitInSync(topic string, p int32, want int, d time.Duration) int32 {
	c.t.Helper()
	return c.WaitPartition(topic, p, d, func(pv proctest.Partition) bool { return len(pv.ISR) == want && pv.Leader >= 1 }).Leader
}

// createWithCoordinator creates topic (6 partitions, replication factor
// 3), waits until grp has a coordinator and its __consumer_offsets
// partition three in-sync replicas, and returns that partition.
func (c *cluster) createWithCoordinator(t *testing.T, ctx context.Context, adm *kadm.Client, grp, topic string) int32 {
	t.Helper()
	if resp, err := adm.CreateTopic(ctx, 6, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	p := group.PartitionFor(grp, 50)
	if err := proctest.WaitFor(30*time.Second, func() bool { _, err := c.coordinator(ctx, grp); return err == nil }); err != nil {
		t.Fatal("no coordinator for the group: ", err)
	}
	c.waitInSync(group.OffsetsTopic, p, 3, 30*time.Second)
	return p
}
