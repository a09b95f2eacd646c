package clustertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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

// view is what one node's Metadata says about the cluster and one topic.
type view struct {
	controller int32
	brokers    []int32 // sorted
	parts      map[int32]kmsg.MetadataResponseTopicPartition
}

// viewFrom asks n for the cluster and topic. A topic-level error, or a
// topic that does not have exactly want partitions, is an error.
func viewFrom(ctx context.Context, n *node, topic string, want int) (view, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := n.Metadata(rctx, topic)
	if err != nil {
		return view{}, err
	}
	v := view{controller: resp.ControllerID, parts: map[int32]kmsg.MetadataResponseTopicPartition{}}
	for _, b := range resp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	slices.Sort(v.brokers)
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if rt.ErrorCode != 0 {
			return view{}, fmt.Errorf("topic %s: error code %d", topic, rt.ErrorCode)
		}
		for _, p := range rt.Partitions {
			v.parts[p.Partition] = p
		}
	}
	if len(v.parts) != want {
		return view{}, fmt.Errorf("topic %s: %d partitions, want %d", topic, len(v.parts), want)
	}
	return v, nil
}

// healedFor returns "" when v shows a live controller and a live leader for
// every partition, else what is still missing. live is the set of running
// nodes.
func (v view) healedFor(live map[int32]bool) string {
	var missing []string
	if !live[v.controller] {
		missing = append(missing, fmt.Sprintf("controller %d not live", v.controller))
	}
	for p, pd := range v.parts {
		if pd.ErrorCode != 0 || !live[pd.Leader] {
			missing = append(missing, fmt.Sprintf("partition %d leader %d (error %d)", p, pd.Leader, pd.ErrorCode))
		}
	}
	slices.Sort(missing)
	return strings.Join(missing, "; ")
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

// checkEpochs fails the test if two nodes ever became leader of one
// partition in the same leader epoch, or two controllers elected different
// leaders for one partition and epoch, reading every run's stderr of every
// node. It returns how many leader claims it read.
func checkEpochs(t *testing.T, nodes []*node) int {
	t.Helper()
	var became, elected []proctest.LeadClaim
	for _, n := range nodes {
		log := n.Output()
		cs, err := proctest.LeadClaims(log, "became leader", "node")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Node != n.id {
				t.Fatalf("node %d logged a leader claim as node %d", n.id, c.Node)
			}
		}
		became = append(became, cs...)
		es, err := proctest.LeadClaims(log, "elected leader", "leader")
		if err != nil {
			t.Fatal(err)
		}
		elected = append(elected, es...)
	}
	if bad := proctest.EpochConflicts(became); len(bad) > 0 {
		t.Fatalf("two nodes led one partition in the same epoch:\n%s", strings.Join(bad, "\n"))
	}
	if bad := proctest.EpochConflicts(elected); len(bad) > 0 {
		t.Fatalf("controllers elected different leaders for one partition and epoch:\n%s", strings.Join(bad, "\n"))
	}
	return len(became)
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
			if ctrl >= 0 && v.controller != ctrl {
				last = fmt.Sprintf("node %d: controller %d, another node says %d", n.id, v.controller, ctrl)
				return false
			}
			ctrl = v.controller
			if brokers && !slices.Equal(v.brokers, want) {
				last = fmt.Sprintf("node %d: brokers %v, want %v", n.id, v.brokers, want)
				return false
			}
			if why := v.healedFor(live); why != "" {
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
