package membershiptest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// lastISRRecords is how many acks=all records the unclean-restart tests
// write.
const lastISRRecords = 1000

// TestLastISRMemberReturnsWithEmptyDisk: with every record acknowledged by
// the three replicas, the two followers are killed (the ISR shrinks to the
// leader), then the leader; the leader's data dir is deleted; the followers
// start, then the old leader. The old leader, the last ISR member, lost
// every acknowledged record, so it must not lead: the followers, eligible
// leader replicas since they left the ISR below min.insync.replicas
// (KIP-966), hold them all. Before, the old leader was elected with its
// empty log and the followers truncated to it: 0 records.
func TestLastISRMemberReturnsWithEmptyDisk(t *testing.T) {
	testLastISRMemberReturns(t, "wiped", func(t *testing.T, n *node, topic string) {
		if err := os.RemoveAll(n.DataDir()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLastISRMemberReturnsWithTornLog is the same with the old leader's
// last segment cut to 70% of its size, as a lost unflushed tail: before,
// the old leader was elected and the followers truncated to it, losing the
// records it lost.
func TestLastISRMemberReturnsWithTornLog(t *testing.T) {
	testLastISRMemberReturns(t, "torn", func(t *testing.T, n *node, topic string) {
		logs, err := filepath.Glob(filepath.Join(n.partitionDir(topic, 0), "*.log"))
		if err != nil || len(logs) == 0 {
			t.Fatalf("no .log in %s: %v", n.partitionDir(topic, 0), err)
		}
		slices.Sort(logs)
		last := logs[len(logs)-1]
		fi, err := os.Stat(last)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(last, fi.Size()*7/10); err != nil {
			t.Fatal(err)
		}
	})
}

func testLastISRMemberReturns(t *testing.T, topic string, damage func(*testing.T, *node, string)) {
	c := startCluster(t, 1, 2, 3)
	c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	pv := c.waitPartition(topic, 0, 30*time.Second, func(pv partitionView) bool {
		return len(pv.order) == 3 && pv.leader == pv.order[0] && len(pv.isr) == 3
	})
	offsets := c.produce(topic, 0, lastISRRecords)
	leader, followers := c.nodes[pv.order[0]], []*node{c.nodes[pv.order[1]], c.nodes[pv.order[2]]}
	for _, f := range followers {
		f.Kill()
	}
	c.waitPartition(topic, 0, 30*time.Second, func(pv partitionView) bool {
		return slices.Equal(pv.isr, []int32{leader.id})
	})
	leader.Kill()
	damage(t, leader, topic)
	for _, f := range followers {
		f.Start()
	}
	for _, f := range followers {
		f.WaitReady()
	}
	leader.Start()
	leader.WaitReady()
	c.waitPartition(topic, 0, 60*time.Second, func(pv partitionView) bool { return pv.leader >= 0 })
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}
