package proctest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition is one partition as one node's Metadata shows it.
type Partition struct {
	Leader, Epoch int32
	// Replicas and ISR are sorted; Order is the replicas in the order
	// given, the preferred leader first.
	Replicas, ISR, Order []int32
	// Err is the partition's error code (LEADER_NOT_AVAILABLE while it has
	// no leader).
	Err int16
}

func (p Partition) String() string {
	return fmt.Sprintf("leader %d epoch %d replicas %v isr %v", p.Leader, p.Epoch, p.Replicas, p.ISR)
}

// Same reports whether p and o name the same leader, epoch, replicas and
// ISR.
func (p Partition) Same(o Partition) bool {
	return p.Leader == o.Leader && p.Epoch == o.Epoch && slices.Equal(p.Replicas, o.Replicas) && slices.Equal(p.ISR, o.ISR)
}

// View is what one node's Metadata says about the cluster and one topic.
type View struct {
	Controller int32
	Brokers    []int32 // sorted
	Partitions map[int32]Partition
}

// Healed returns "" when v names a controller in live and, for every
// partition, a leader in live and no error; else what is still missing.
func (v View) Healed(live func(id int32) bool) string {
	var missing []string
	if !live(v.Controller) {
		missing = append(missing, fmt.Sprintf("controller %d not live", v.Controller))
	}
	for p, pv := range v.Partitions {
		if pv.Err != 0 || !live(pv.Leader) {
			missing = append(missing, fmt.Sprintf("partition %d leader %d (error %d)", p, pv.Leader, pv.Err))
		}
	}
	slices.Sort(missing)
	return strings.Join(missing, "; ")
}

// Partitions asks this node, and only it, for the cluster and topic,
// within 3 s of ctx. A topic-level error, or a topic that is not listed,
// is an error; a partition-level error is the partition's Err.
func (n *Node) Partitions(ctx context.Context, topic string) (View, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := n.Metadata(rctx, topic)
	if err != nil {
		return View{}, err
	}
	return viewOf(resp, topic, n.name+"'s metadata")
}

// AskPartitions is Partitions through r (a client of a cluster whose
// nodes this package cannot dial itself, such as a SASL_SSL-only one): the
// view of whichever node r asks.
func AskPartitions(ctx context.Context, r Requester, topic string) (View, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := r.Request(rctx, req)
	if err != nil {
		return View{}, err
	}
	return viewOf(resp.(*kmsg.MetadataResponse), topic, "the metadata")
}

// viewOf is resp's view of the cluster and topic; who names the answer
// in an error.
func viewOf(resp *kmsg.MetadataResponse, topic, who string) (View, error) {
	v := View{Controller: resp.ControllerID, Partitions: map[int32]Partition{}}
	for _, b := range resp.Brokers {
		v.Brokers = append(v.Brokers, b.NodeID)
	}
	slices.Sort(v.Brokers)
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if rt.ErrorCode != 0 {
			return View{}, fmt.Errorf("topic %s: error %d", topic, rt.ErrorCode)
		}
		for _, p := range rt.Partitions {
			pv := Partition{Leader: p.Leader, Epoch: p.LeaderEpoch, Err: p.ErrorCode,
				Replicas: slices.Sorted(slices.Values(p.Replicas)), ISR: slices.Sorted(slices.Values(p.ISR)), Order: slices.Clone(p.Replicas)}
			v.Partitions[p.Partition] = pv
		}
		return v, nil
	}
	return View{}, fmt.Errorf("topic %s not in %s", topic, who)
}

// Partition asks this node, and only it, for partition p of topic
// (Partitions); a partition it does not list is an error.
func (n *Node) Partition(ctx context.Context, topic string, p int32) (Partition, error) {
	v, err := n.Partitions(ctx, topic)
	if err != nil {
		return Partition{}, err
	}
	pv, ok := v.Partitions[p]
	if !ok {
		return Partition{}, fmt.Errorf("%s-%d not in %s's metadata", topic, p, n.name)
	}
	return pv, nil
}

// WaitPartition waits until every live node (LiveIDs) shows partition p of
// topic in one state (leader, epoch, replicas, ISR) that satisfies ok,
// with a live leader that has logged taking the role in that epoch, and
// returns that state; it fails the test after d.
func (c *Cluster) WaitPartition(topic string, p int32, d time.Duration, ok func(Partition) bool) Partition {
	t := c.t
	t.Helper()
	ctx := Context(t, d+5*time.Second)
	var got Partition
	var last string
	err := WaitFor(d, func() bool {
		first := true
		for _, id := range c.LiveIDs() {
			pv, err := c.Node(id).Partition(ctx, topic, p)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", id, err)
				return false
			}
			if !first && !pv.Same(got) {
				last = fmt.Sprintf("nodes disagree: %v and %v", got, pv)
				return false
			}
			got, first = pv, false
		}
		last = got.String()
		if first || !ok(got) {
			return false
		}
		if !c.Live(got.Leader) {
			last += ": leader not live"
			return false
		}
		if !c.Node(got.Leader).TookRole("became leader", topic, p, got.Epoch) {
			last += ": leader has not taken the role yet"
			return false
		}
		return true
	})
	if err != nil {
		t.Fatalf("%s-%d: not in the awaited state after %v: %s", topic, p, d, last)
	}
	return got
}

// WaitTopic waits until every node of ids is live and shows every one of
// parts partitions of topic satisfying ok, each with a leader that has
// logged taking the role in its epoch; it fails the test after d.
func (c *Cluster) WaitTopic(topic string, parts int, ids []int32, d time.Duration, ok func(Partition) bool) {
	t := c.t
	t.Helper()
	ctx := Context(t, d+5*time.Second)
	var last string
	err := WaitFor(d, func() bool {
		for _, id := range ids {
			if !c.Live(id) {
				last = fmt.Sprintf("node %d not live", id)
				return false
			}
			v, err := c.Node(id).Partitions(ctx, topic)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", id, err)
				return false
			}
			if len(v.Partitions) != parts {
				last = fmt.Sprintf("node %d: %d partitions, want %d", id, len(v.Partitions), parts)
				return false
			}
			for p, pv := range v.Partitions {
				if pv.Err != 0 || !ok(pv) {
					last = fmt.Sprintf("node %d: partition %d %v (error %d)", id, p, pv, pv.Err)
					return false
				}
				if pv.Leader < 0 || !c.Live(pv.Leader) || !c.Node(pv.Leader).TookRole("became leader", topic, p, pv.Epoch) {
					last = fmt.Sprintf("partition %d: node %d not yet leader in epoch %d", p, pv.Leader, pv.Epoch)
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("%s not settled after %v: %s", topic, d, last)
	}
}
