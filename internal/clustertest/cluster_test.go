package clustertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/internal/proctest"
)

// quietLogger drops the in-process NATS servers' logs.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startNodes starts nodes 1..n on natsURLs with data under dir, all at
// once, and waits until each is ready.
func startNodes(t *testing.T, dir, natsURLs string, n int, extra ...string) []*node {
	t.Helper()
	nodes := make([]*node, n)
	for i := range nodes {
		nodes[i] = newNode(t, dir, int32(i+1), natsURLs, extra...)
		nodes[i].Start()
	}
	for _, nd := range nodes {
		nd.WaitReady()
	}
	return nodes
}

// startNodesInTurn starts nodes 1..n like startNodes, but each only once
// the previous one is ready. On a NATS cluster, nodes starting together
// can stall for 10 s in broker.newProducerIDs and exit: concurrent
// CreateOrUpdateKeyValue calls on one replicated bucket time out (reported
// to the lead with a reproduction); tests whose subject is not the start
// avoid that race this way.
func startNodesInTurn(t *testing.T, dir, natsURLs string, n int, extra ...string) []*node {
	t.Helper()
	nodes := make([]*node, n)
	for i := range nodes {
		nodes[i] = newNode(t, dir, int32(i+1), natsURLs, extra...)
		nodes[i].Start()
		nodes[i].WaitReady()
	}
	return nodes
}

// liveIDs is the set of nodes with a live run.
func liveIDs(nodes []*node) map[int32]bool {
	out := map[int32]bool{}
	for _, n := range nodes {
		if n.Alive() {
			out[n.id] = true
		}
	}
	return out
}

// viewFrom asks n, and only n, for the cluster and topic
// (proctest.Node.Partitions); a topic without exactly want partitions is
// an error.
func viewFrom(ctx context.Context, n *node, topic string, want int) (proctest.View, error) {
	v, err := n.Partitions(ctx, topic)
	if err == nil && len(v.Partitions) != want {
		err = fmt.Errorf("topic %s: %d partitions, want %d", topic, len(v.Partitions), want)
	}
	return v, err
}

// leaderClaimed reports whether node n's stderr says it became leader of
// topic-partition in epoch: the metadata's leader has taken the role.
func leaderClaimed(n *node, topic string, partition, epoch int32) bool {
	cs, err := proctest.LeadClaims(n.Output(), "became leader", "node")
	if err != nil {
		return false
	}
	return slices.Contains(cs, proctest.LeadClaim{Node: n.id, Topic: topic, Partition: partition, Epoch: epoch})
}

// checkEpochs is proctest.CheckEpochs over nodes: no two nodes led one
// partition in the same epoch, no two controllers elected different
// leaders for one partition and epoch. It returns how many leader claims
// it read.
func checkEpochs(t *testing.T, nodes []*node) int {
	t.Helper()
	byID := map[int32]*proctest.Node{}
	for _, n := range nodes {
		byID[n.id] = n.Node
	}
	return proctest.CheckEpochs(t, byID)
}

// createInStep waits up to wait until node 1's Metadata lists three
// brokers and a controller, creates topic there (parts partitions of three
// replicas, with configs), and waits until its replicas are in step
// (waitInStep, up to 30 s).
func createInStep(ctx context.Context, t *testing.T, nodes []*node, wait time.Duration, topic string, parts int, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(nodes[0].Client())
	if err := proctest.WaitFor(wait, func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3 && m.Controller > 0
	}); err != nil {
		t.Fatal("three brokers and a controller: ", err)
	}
	if _, err := adm.CreateTopic(ctx, int32(parts), 3, configs, topic); err != nil {
		t.Fatal(err)
	}
	waitInStep(ctx, t, nodes, topic, parts, 30*time.Second)
}

// waitInStep waits until every live node's Metadata lists exactly the live
// nodes as brokers, names a live controller, and has a live leader for every
// partition of topic, failing the test after d.
func waitInStep(ctx context.Context, t *testing.T, nodes []*node, topic string, parts int, d time.Duration) {
	t.Helper()
	waitHealed(ctx, t, nodes, topic, parts, d, true)
}

// waitHealed is waitInStep, with the check of the broker lists only when
// brokers is set. Every live node must also name the same controller.
func waitHealed(ctx context.Context, t *testing.T, nodes []*node, topic string, parts int, d time.Duration, brokers bool) {
	t.Helper()
	live := liveIDs(nodes)
	var want []int32
	for id := range live {
		want = append(want, id)
	}
	slices.Sort(want)
	var last string
	err := proctest.WaitFor(d, func() bool {
		ctrl := int32(-1)
		for _, n := range nodes {
			if !live[n.id] {
				continue
			}
			v, err := viewFrom(ctx, n, topic, parts)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", n.id, err)
				return false
			}
			if ctrl >= 0 && v.Controller != ctrl {
				last = fmt.Sprintf("node %d: controller %d, another node says %d", n.id, v.Controller, ctrl)
				return false
			}
			ctrl = v.Controller
			if brokers && !slices.Equal(v.Brokers, want) {
				last = fmt.Sprintf("node %d: brokers %v, want %v", n.id, v.Brokers, want)
				return false
			}
			if why := v.Healed(func(id int32) bool { return live[id] }); why != "" {
				last = fmt.Sprintf("node %d: %s", n.id, why)
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("cluster not in step after %v: %s", d, last)
	}
}

// createRF3 creates topic with parts partitions, three replicas each and
// min.insync.replicas=2, the benchmarks' topic, failing tb otherwise.
func createRF3(tb testing.TB, ctx context.Context, adm *kadm.Client, topic string, parts int32) {
	tb.Helper()
	two := "2"
	resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &two}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		tb.Fatalf("creating %d partitions: %v", parts, err)
	}
}

// everyPartition reports whether md lists topic with its parts
// partitions, each without an error and satisfying ok.
func everyPartition(md kadm.Metadata, topic string, parts int32, ok func(kadm.PartitionDetail) bool) bool {
	td, found := md.Topics[topic]
	if !found || td.Err != nil || int32(len(td.Partitions)) != parts {
		return false
	}
	for _, pd := range td.Partitions {
		if pd.Err != nil || !ok(pd) {
			return false
		}
	}
	return true
}
