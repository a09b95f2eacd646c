package replicationtest

import (
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestLeaderKillLoop runs an idempotent acks=all producer against a
// 3-partition, RF=3, min.insync.replicas=2 topic while the leader of each
// partition in turn is killed with SIGKILL and restarted, 9 times (21 with proctest.LongEnv). Each
// round waits for a new leader, restarts the victim on its data dir, waits
// until every ISR is whole again and more records are acknowledged. At the
// end every acknowledged record must be read back exactly once, in order,
// at its acknowledged offset, and the three replicas' logs must hold the
// same bytes below the high watermark.
func TestLeaderKillLoop(t *testing.T) {
	kills := proctest.Rounds(9, 21) // every partition's leader killed 3 times (7 with proctest.LongEnv)
	c := startCluster(t, "killed", 3)
	lp := c.startProducer(2*time.Millisecond, 1_000_000)
	lp.waitAcked(200, 30*time.Second)
	budget := time.Now().Add(4 * time.Minute)
	for i := range kills {
		if time.Now().After(budget) {
			t.Fatalf("kill loop over budget after %d kills", i)
		}
		p := int32(i) % c.parts
		leader, epoch := c.leaderOf(p, 30*time.Second)
		victim := c.node(leader)
		begin := time.Now()
		victim.Kill()
		next, nextEpoch := c.leaderOf(p, 30*time.Second, leader)
		if nextEpoch <= epoch {
			t.Fatalf("kill %d: partition %d leader %d in epoch %d, not past %d", i+1, p, next, nextEpoch, epoch)
		}
		took := time.Since(begin)
		victim.Start()
		victim.WaitReady()
		c.waitSettled(60 * time.Second)
		lp.waitAcked(100, 30*time.Second)
		t.Logf("kill %2d: partition %d leader %d -> %d (epoch %d) in %v; %s", i+1, p, leader, next, nextEpoch,
			took.Round(time.Millisecond), lp.summary())
	}
	lp.stop()
	t.Logf("producer: %s", lp.summary())
	n, _ := lp.checkAcked(t)
	c.checkReplicasIdentical(30 * time.Second)
	t.Logf("read back %d records; %d became-leader lines, no epoch led twice", n, proctest.CheckEpochs(t, c.Nodes()))
	c.CheckNoPanic()
}
