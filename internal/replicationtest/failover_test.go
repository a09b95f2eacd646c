package replicationtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/internal/proctest"
)

// TestRapidDoubleFailover kills a partition's leader, and kills the
// replica that takes over as soon as it has taken the role, before the
// first is back: the third replica must lead with everything acknowledged,
// and once both return no acknowledged record is lost or duplicated.
func TestRapidDoubleFailover(t *testing.T) {
	c := startCluster(t, "double", 1)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(500, 30*time.Second)
	first, _ := c.leaderOf(0, 30*time.Second)
	c.node(first).Kill()
	second, _ := c.leaderOf(0, 30*time.Second, first)
	c.node(second).Kill()
	third, epoch := c.leaderOf(0, 30*time.Second, first, second)
	t.Logf("leader %d killed, then %d; node %d leads in epoch %d", first, second, third, epoch)
	c.node(first).Start()
	c.node(second).Start()
	c.node(first).WaitReady()
	c.node(second).WaitReady()
	c.waitSettled(60 * time.Second)
	lp.waitAcked(300, 30*time.Second)
	lp.stop()
	n, _ := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	t.Logf("read back %d records; %s", n, lp.summary())
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}

// TestLastReplicaStanding kills both followers of a partition (KIP-966):
// once the ISR has shrunk to the leader alone, an acks=all produce must
// fail with NOT_ENOUGH_REPLICAS rather than be acknowledged by one copy,
// and when the followers return nothing acknowledged is lost.
func TestLastReplicaStanding(t *testing.T) {
	c := startCluster(t, "last", 1)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(500, 30*time.Second)
	leader, _ := c.leaderOf(0, 30*time.Second)
	for _, n := range c.nodes {
		if n.id != leader {
			n.Kill()
		}
	}
	b, err := c.node(leader).seed()
	if err != nil {
		t.Fatal(err)
	}
	ctx := proctest.Context(t, time.Minute)
	var codes []int16
	if err := proctest.WaitFor(30*time.Second, func() bool {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		code, _, err := rawProduce(rctx, b, c.topic, 0, -1, "x-alone")
		if err != nil {
			return false
		}
		codes = append(codes, code)
		if code == 0 {
			t.Fatalf("acks=all produce acknowledged with only node %d live", leader)
		}
		return code == kerr.NotEnoughReplicas.Code
	}); err != nil {
		t.Fatalf("no NOT_ENOUGH_REPLICAS within 30s; codes %v", codes)
	}
	t.Logf("acks=all with the leader alone: codes %v", codes)
	stalled := lp.acked.Load()
	for _, n := range c.nodes {
		if n.id != leader {
			n.Start()
		}
	}
	for _, n := range c.nodes {
		n.WaitReady()
	}
	c.waitSettled(60 * time.Second)
	lp.waitAcked(300, 30*time.Second)
	lp.stop()
	n, extras := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	t.Logf("read back %d records (%d acknowledged when both followers died); x-alone records kept: %d; %s",
		n, stalled, len(extras), lp.summary())
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}

// TestEmptyDiskRejoin kills a follower, deletes its whole data dir and
// restarts it: it must fetch the partition from offset 0, rejoin the ISR,
// and hold the same bytes as the others. History here is all on the
// leader's disk (no bucket is shared between the processes).
func TestEmptyDiskRejoin(t *testing.T) {
	c := startCluster(t, "rejoin", 1)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(1000, 30*time.Second)
	leader, _ := c.leaderOf(0, 30*time.Second)
	wiped := c.node(leader%3 + 1)
	wiped.Kill()
	if err := os.RemoveAll(wiped.DataDir()); err != nil {
		t.Fatal(err)
	}
	lp.waitAcked(200, 30*time.Second)
	wiped.Start()
	wiped.WaitReady()
	c.waitSettled(60 * time.Second)
	lp.waitAcked(200, 30*time.Second)
	lp.stop()
	n, _ := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	if _, first, err := batchesBelow(wiped.partitionDir(c.topic, 0), int64(n)); err != nil || first != 0 {
		t.Fatalf("node %d's log after the rejoin starts at %d (%v), want 0", wiped.id, first, err)
	}
	t.Logf("node %d rejoined with an empty disk; read back %d records; %s", wiped.id, n, lp.summary())
	c.CheckNoPanic()
}
