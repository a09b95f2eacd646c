package replicationtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestLeaderPauseLoop is TestLeaderKillLoop with SIGSTOP instead of
// SIGKILL: a paused leader keeps its sockets and its belief that it leads,
// but its broker session expires and the controller elects another leader.
// On SIGCONT it must become a follower in the new epoch (cutting any tail
// the new leader does not have) and rejoin the ISR; no acknowledged record
// may be lost or duplicated.
func TestLeaderPauseLoop(t *testing.T) {
	pauses := proctest.Rounds(3, 6) // every partition's leader paused once (twice with proctest.LongEnv)
	c := startCluster(t, "paused", 3)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(200, 30*time.Second)
	for i := range pauses {
		p := int32(i) % c.parts
		leader, epoch := c.leaderOf(p, 30*time.Second)
		victim := c.node(leader)
		victim.Pause()
		next, nextEpoch := c.leaderOf(p, 30*time.Second, leader)
		if nextEpoch <= epoch {
			t.Fatalf("pause %d: partition %d leader %d in epoch %d, not past %d", i+1, p, next, nextEpoch, epoch)
		}
		lp.waitAcked(100, 30*time.Second) // writes go on without the paused node
		victim.Resume()
		if err := proctest.WaitFor(30*time.Second, func() bool { return followedSince(victim, c.topic, p, nextEpoch) }); err != nil {
			t.Fatalf("pause %d: resumed node %d never became follower of partition %d in epoch >= %d:\n%s", i+1, leader, p, nextEpoch, victim.Tail())
		}
		c.waitSettled(60 * time.Second)
		lp.waitAcked(100, 30*time.Second)
		t.Logf("pause %d: partition %d leader %d -> %d (epoch %d); %s", i+1, p, leader, next, nextEpoch, lp.summary())
	}
	lp.stop()
	n, _ := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	truncs := 0
	for _, nd := range c.nodes {
		truncs += nd.CountLines("truncated divergent tail")
	}
	t.Logf("read back %d records; %d divergent-tail truncations; %d became-leader lines, no epoch led twice",
		n, truncs, proctest.CheckEpochs(t, c.Nodes()))
	c.CheckNoPanic()
}

// followedSince reports whether n logged becoming follower of
// topic-partition in epoch since or later.
func followedSince(n *node, topic string, partition, since int32) bool {
	for _, kv := range n.LogLines("became follower") {
		e, err := strconv.ParseInt(kv["leader_epoch"], 10, 32)
		if err == nil && kv["topic"] == topic && kv["partition"] == strconv.Itoa(int(partition)) && int32(e) >= since {
			return true
		}
	}
	return false
}
