package membershiptest

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestPreferredLeaderRebalance is issue 24's "leadership stays skewed after
// restarts": node 1, the preferred leader of two of six partitions, stops
// cleanly (its controlled shutdown hands its leaderships to nodes 2 and 3)
// and starts again. With auto.leader.rebalance.enable (on by default) and a
// 1 s leader.imbalance.check.interval, the controller must give each
// partition back to its preferred replica once that replica is back in the
// ISR, and every record acknowledged with acks=all before, between and
// after the moves must read back at its offset.
//
// Before the balancer, node 1 led nothing after its restart: the wait for
// the preferred leaders failed at its deadline with node 2 or 3 leading.
func TestPreferredLeaderRebalance(t *testing.T) {
	c := startClusterFlags(t, []string{"--leader-imbalance-check-interval", "1s"}, 1, 2, 3)
	assign := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
	offsets := c.createSkew(assign)

	n1 := c.nodes[1]
	n1.Stop(30 * time.Second)
	c.waitBrokers(2, 3)
	for p := range assign {
		c.WaitPartition("skew", int32(p), 30*time.Second, func(pv proctest.Partition) bool { return pv.Leader != 1 })
		offsets[p] = append(offsets[p], c.produceFrom("skew", int32(p), 100, 100)...)
	}
	n1.Start()
	n1.WaitReady()
	c.waitBrokers(1, 2, 3)

	c.producePreferred(assign, 60*time.Second, 200, offsets)
	for p := range assign {
		c.checkRecords("skew", int32(p), offsets[p])
	}
	moved := 0
	for _, n := range c.nodes {
		moved += n.CountLines("moved leadership to the preferred replica")
	}
	if moved == 0 {
		t.Fatalf("no controller logged a preferred-leader move")
	}
}

// TestPreferredElectionVerb: with auto_leader_rebalance_enable off, node 1's
// restart leaves the partitions it prefers led by nodes 2 and 3 (the
// setting is obeyed), and `shale partition elect-preferred skew` moves
// them back, losing no acks=all record. The replica balancer is off: it
// evens out the preferred replicas of this skewed assignment (a
// `preferred` move of skew-0 from node 1 to 3), and a pass landing between
// node 1's return and the verb made the verb elect node 3.
func TestPreferredElectionVerb(t *testing.T) {
	c := startClusterFlags(t, []string{"--auto-leader-rebalance-enable=false", "--leader-imbalance-check-interval", "1s",
		"--balancer-enable=false"}, 1, 2, 3)
	assign := [][]int32{{1, 2, 3}, {2, 3, 1}, {1, 3, 2}}
	offsets := c.createSkew(assign)
	n1 := c.nodes[1]
	n1.Stop(30 * time.Second)
	c.waitBrokers(2, 3)
	n1.Start()
	n1.WaitReady()
	c.waitBrokers(1, 2, 3)
	for p := range assign {
		pv := c.WaitPartition("skew", int32(p), 30*time.Second, func(pv proctest.Partition) bool { return len(pv.ISR) == 3 })
		if pv.Leader == 1 {
			t.Fatalf("skew-%d: node 1 leads again with auto_leader_rebalance_enable off: %v", p, pv)
		}
		offsets[p] = append(offsets[p], c.produceFrom("skew", int32(p), 100, 100)...)
	}

	cmd := exec.Command(shaleBin, "partition", "elect-preferred", "skew", "--bootstrap", c.nodes[2].Kafka())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shale partition elect-preferred: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "elected"); got != 2 {
		t.Fatalf("elect-preferred moved %d partitions, want 2:\n%s", got, out)
	}
	c.producePreferred(assign, 30*time.Second, 200, offsets)
	for p := range assign {
		c.checkRecords("skew", int32(p), offsets[p])
	}
}

// createSkew creates topic skew with the replicas of assign (a
// partition's first replica is its preferred leader) and, as
// producePreferred, writes each partition the records 0 to 99, whose
// offsets it returns by partition.
func (c *cluster) createSkew(assign [][]int32) [][]int64 {
	c.t.Helper()
	if err := c.createAssigned("skew", assign, -1, -1); err != nil {
		c.t.Fatalf("create skew: %v", err)
	}
	offsets := make([][]int64, len(assign))
	c.producePreferred(assign, 30*time.Second, 0, offsets)
	return offsets
}

// producePreferred waits, for each partition p of skew in turn, until
// assign[p][0] leads it with all three replicas in the ISR (for up to d),
// and writes it the records from to from+99 with acks=all, adding their
// offsets to offsets[p].
func (c *cluster) producePreferred(assign [][]int32, d time.Duration, from int, offsets [][]int64) {
	c.t.Helper()
	for p := range assign {
		c.WaitPartition("skew", int32(p), d, func(pv proctest.Partition) bool {
			return pv.Leader == assign[p][0] && len(pv.ISR) == 3
		})
		offsets[p] = append(offsets[p], c.produceFrom("skew", int32(p), from, 100)...)
	}
}
