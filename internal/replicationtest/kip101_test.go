package replicationtest

import (
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestKIP101UnflushedTailOnLeaderRestart kills the leader of a partition,
// cuts acknowledged batches off the end of its active segment while it is
// down (the tail it had written but not flushed when it died), and
// restarts it. The replica with the short log must fetch the missing
// records back rather than make the others truncate to it; the test then
// kills leaders until the once-short replica leads, so that its log is the
// one served. Every acknowledged record must survive.
func TestKIP101UnflushedTailOnLeaderRestart(t *testing.T) {
	c := startCluster(t, "kip101", 1)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(500, 30*time.Second)
	short, _ := c.leaderOf(0, 30*time.Second)
	victim := c.node(short)
	victim.Kill()
	ackedBefore := lp.maxAckedOffset(0)
	dropped, err := dropTailBatches(victim.partitionDir(c.topic, 0), 20)
	if err != nil {
		t.Fatal(err)
	}
	if dropped > ackedBefore {
		t.Fatalf("dropped from offset %d, but only offsets up to %d were acknowledged: nothing acknowledged was lost", dropped, ackedBefore)
	}
	t.Logf("node %d: dropped its log from offset %d; offsets up to %d were acknowledged", short, dropped, ackedBefore)
	_, epoch := c.leaderOf(0, 30*time.Second, short)
	lp.waitAcked(200, 30*time.Second)
	victim.Start()
	victim.WaitReady()
	if err := proctest.WaitFor(30*time.Second, func() bool { return followedSince(victim, c.topic, 0, epoch) }); err != nil {
		t.Fatalf("node %d never followed in epoch >= %d", short, epoch)
	}
	c.waitSettled(60 * time.Second)
	// Move leadership until the replica that lost its tail leads.
	for round := 0; ; round++ {
		leader, _ := c.leaderOf(0, 30*time.Second)
		if leader == short {
			break
		}
		if round == 4 {
			t.Fatalf("node %d did not become leader after %d leader kills", short, round)
		}
		c.node(leader).Kill()
		c.leaderOf(0, 30*time.Second, leader)
		lp.waitAcked(100, 30*time.Second)
		c.node(leader).Start()
		c.node(leader).WaitReady()
		c.waitSettled(60 * time.Second)
	}
	lp.waitAcked(200, 30*time.Second)
	lp.stop()
	n, _ := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	t.Logf("read back %d records; %s", n, lp.summary())
	proctest.CheckEpochs(t, c.Nodes())
	c.CheckNoPanic()
}
