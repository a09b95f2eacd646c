package membershiptest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
)

// lastISRRecords is how many acks=all records the unclean-restart tests
// write.
const lastISRRecords = 1000

// createLastISRTopic creates topic (one partition, three replicas,
// min.insync.replicas minISR), waits until its first replica leads it with
// all three in the ISR, and writes it lastISRRecords records. It returns
// the partition's replicas in their order and the records' offsets.
func (c *cluster) createLastISRTopic(topic, minISR string) ([]*node, []int64) {
	c.t.Helper()
	c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": minISR})
	pv := c.WaitPartition(topic, 0, 30*time.Second, func(pv proctest.Partition) bool {
		return len(pv.Order) == 3 && pv.Leader == pv.Order[0] && len(pv.ISR) == 3
	})
	offsets := c.produce(topic, 0, lastISRRecords)
	return []*node{c.nodes[pv.Order[0]], c.nodes[pv.Order[1]], c.nodes[pv.Order[2]]}, offsets
}

// TestLastISRMemberReturnsWithEmptyDisk: with every record acknowledged by
// the three replicas, the two followers are killed (the ISR shrinks to the
// leader), then the leader; the leader's data dir is deleted; the followers
// start, then the old leader. The old leader, the last ISR member, lost
// every acknowledged record, so it must not lead: the followers, eligible
// leader replicas since they left the ISR below min.insync.replicas
// (KIP-966), hold them all.
//
// The steps are ordered as in the clean-clone failure of issue 22 (see
// testLastISRMemberReturns); before its fix the old leader was elected with
// its empty log and the followers truncated to it: 0 records.
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

// testLastISRMemberReturns runs the scenario with the old leader's disk
// damaged by damage, in the order of the clean-clone failure of issue 22:
//
//  1. the followers are killed; the controller takes them out of the ISR,
//     into the ELR (the ISR is below min.insync.replicas);
//  2. the leader re-admits them (a hook writes the record: the leader's
//     catch-up rule re-admitted a follower that had fetched within
//     replica.lag.time.max.ms, dead or not, and the leader was killed before
//     the controller took them out again; replica.proposeISR now skips a
//     follower without a live registration, but a leader whose view of the
//     registrations lags the controller's can still write this record);
//  3. the leader is killed while it is the only live node, so no controller
//     proves its process gone: its registration stays live (a hook answers
//     its liveness probes, as its session had not expired in that run) and
//     trusted;
//  4. the followers start again (uncleanly: they were killed) and register
//     before any node acts as controller (a hook holds the lease), then the
//     controller decides: it took the untrusted followers out of the ISR
//     and, before the fix, recorded no ELR ("partition changed leader=1
//     isr=[1] elr=[]"), so the old leader stayed the only candidate;
//  5. the old leader's registration ends; it starts again with its damaged
//     disk. Before the fix it was elected as the longest log of the one
//     candidate, and the followers truncated the acknowledged records.
func testLastISRMemberReturns(t *testing.T, topic string, damage func(*testing.T, *node, string)) {
	// A broker session far longer than the test: a killed node's
	// registration ends only when a controller proves its process gone.
	c := startClusterFlags(t, []string{"--broker-session-timeout", "120s"}, 1, 2, 3)
	h := c.hooks()
	order, offsets := c.createLastISRTopic(topic, "2")
	leader, followers := order[0], order[1:]
	for _, f := range followers {
		f.Kill()
	}
	h.partition(topic, 0, 30*time.Second, func(st controlplane.PartitionState) bool {
		return slices.Equal(st.ISR, []int32{leader.id}) && !h.live(followers[0].id) && !h.live(followers[1].id)
	})
	leader.Kill()
	h.readmit(topic, 0, 2, followers[0].id, followers[1].id)
	stopAnswering := h.answerProbes(leader.id)
	release := h.holdLease(30 * time.Second)
	damage(t, leader, topic)
	for _, f := range followers {
		f.Start()
	}
	for _, f := range followers {
		f.WaitReady()
	}
	release()
	st := h.partition(topic, 0, 30*time.Second, func(st controlplane.PartitionState) bool {
		return !slices.Contains(st.ISR, followers[0].id) && !slices.Contains(st.ISR, followers[1].id)
	})
	t.Logf("after the followers' return: leader %d isr %v elr %v", st.Leader, st.ISR, st.ELR)
	stopAnswering()
	if err := proctest.WaitFor(30*time.Second, func() bool { return !h.live(leader.id) }); err != nil {
		t.Fatalf("node %d's old registration still live: %v", leader.id, err)
	}
	leader.Start()
	leader.WaitReady()
	c.WaitPartition(topic, 0, 60*time.Second, func(pv proctest.Partition) bool { return pv.Leader >= 0 })
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}

// TestCleanlyStoppedLeaderStaysEligible: with the ISR at
// min.insync.replicas (a follower stopped cleanly), the leader stops
// cleanly and its controlled shutdown moves leadership to the other ISR
// member, which the ISR then is alone; that member is killed and its disk
// wiped. The old leader stopped with every acknowledged record, so it is an
// eligible leader replica (KIP-966: a member that leaves the ISR below
// min.insync.replicas joins the ELR in the same change) and leads again as
// soon as it is back. Before, the controlled shutdown took it out of the
// ISR with no ELR: the wiped node was the only candidate and the partition
// stayed offline (or, before new disks were refused, the wiped node was
// elected and the others truncated to its empty log).
func TestCleanlyStoppedLeaderStaysEligible(t *testing.T) {
	const topic = "stopped"
	c := startCluster(t, 1, 2, 3)
	h := c.hooks()
	order, offsets := c.createLastISRTopic(topic, "2")
	leader, next, other := order[0], order[1], order[2]
	other.Stop(30 * time.Second)
	h.partition(topic, 0, 30*time.Second, func(st controlplane.PartitionState) bool {
		return st.Leader == leader.id && len(st.ISR) == 2 && !slices.Contains(st.ISR, other.id)
	})
	leader.Stop(30 * time.Second)
	st := h.partition(topic, 0, 30*time.Second, func(st controlplane.PartitionState) bool {
		return st.Leader == next.id && slices.Equal(st.ISR, []int32{next.id})
	})
	t.Logf("after the leader's controlled shutdown: leader %d isr %v elr %v", st.Leader, st.ISR, st.ELR)
	next.Kill()
	if err := os.RemoveAll(next.DataDir()); err != nil {
		t.Fatal(err)
	}
	leader.Start()
	leader.WaitReady()
	c.WaitPartition(topic, 0, 60*time.Second, func(pv proctest.Partition) bool { return pv.Leader == leader.id })
	for _, n := range []*node{next, other} {
		n.Start()
		n.WaitReady()
	}
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}
