package membershiptest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestReassignOntoFencedBroker moves a partition onto a node that was
// killed a moment before, as the chaos suite did (schedule reassign seed
// 303, mixed seed 301). Kafka's controller keeps a dead broker registered,
// fenced, so the move is accepted, stays in progress while the node is
// down (the adding replica is not in the ISR), and completes once the node
// is back and has caught up by the leader's rule. The partition is
// [1,2,3] with min.insync.replicas=2 and the target [4, old[1], old[2]]
// also removes the leader: acks=all writes go on meanwhile on the old
// replicas, node 4 is restarted, and the move must end with node 4 in the
// ISR holding every acknowledged record.
//
// Before the fix the reassignment was refused with
// INVALID_REPLICA_ASSIGNMENT ("broker 4 is not registered"): the liveness
// probe had deleted node 4's registration and nothing else remembered it.
func TestReassignOntoFencedBroker(t *testing.T) {
	const topic = "move-fenced"
	c, old, offsets := startMoveCluster(t, topic)
	n4 := c.nodes[4]
	n4.Kill()
	c.waitBrokers(1, 2, 3) // the live brokers, as Metadata lists them: node 4 is fenced

	target := []int32{4, old[1], old[2]}
	if err := c.reassign(topic, target); err != nil {
		t.Fatalf("reassigning onto fenced node 4: %v", err)
	}
	offsets = append(offsets, c.produceFrom(topic, 0, len(offsets), 500)...)
	r, inProgress, err := c.reassignment(topic)
	if err != nil {
		t.Fatal(err)
	}
	if !inProgress || !slices.Equal(r.AddingReplicas, []int32{4}) || !slices.Equal(r.RemovingReplicas, []int32{old[0]}) {
		t.Fatalf("while node 4 is down: in progress %v, %+v; want adding [4] removing [%d]", inProgress, r, old[0])
	}
	pv := c.WaitPartition(topic, 0, 30*time.Second, func(pv proctest.Partition) bool { return true })
	if slices.Contains(pv.ISR, 4) || pv.Leader != old[0] {
		t.Fatalf("while node 4 is down: %v; want leader %d and 4 outside the ISR", pv, old[0])
	}

	n4.Start()
	n4.WaitReady()
	c.waitBrokers(1, 2, 3, 4)
	t.Logf("while node 4 was down: %v, reassignment %+v; node 4 back", pv, r)
	t.Logf("moved: %v", c.waitMoved(topic, old, target))
	offsets = append(offsets, c.produceFrom(topic, 0, len(offsets), 100)...)
	c.checkRecords(topic, 0, offsets)
	// Node 4 itself holds them: with the others stopped it is the only
	// replica that can serve, and it leads only as an ISR member.
	for _, id := range target[1:] {
		c.nodes[id].Stop(30 * time.Second)
	}
	if err := proctest.WaitFor(30*time.Second, func() bool {
		pv, err := n4.Partition(context.Background(), topic, 0)
		return err == nil && pv.Leader == 4
	}); err != nil {
		t.Fatalf("node 4 does not lead once the others stopped: %v", err)
	}
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}
