package membershiptest

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
)

// TestUncleanElectionRequestSkipsANewDisk: with min.insync.replicas=1 the
// followers leave the ISR without joining the ELR when they are killed;
// then the leader is killed and its disk wiped. Its old ISR of one came
// back with nothing, so the controller leaves the partition offline, and
// an operator asks ElectLeaders UNCLEAN, as kafka-leader-election.sh
// --election-type unclean does. The followers hold every record written
// while they were in sync: the request must elect one of them, and elect
// the wiped node only if no other replica were live. Before the fix the
// request trusted every live broker, elected the wiped last ISR member,
// and both followers truncated their records to its empty log.
func TestUncleanElectionRequestSkipsANewDisk(t *testing.T) {
	c := startCluster(t, 1, 2, 3)
	h := c.hooks()
	const topic = "unclean-request"
	order, offsets := c.createLastISRTopic(topic, "1")
	leader, followers := order[0], order[1:]
	for _, f := range followers {
		f.Kill()
	}
	h.partition(topic, 0, 60*time.Second, func(st controlplane.PartitionState) bool {
		return slices.Equal(st.ISR, []int32{leader.id}) && len(st.ELR) == 0
	})
	leader.Kill()
	if err := os.RemoveAll(leader.DataDir()); err != nil {
		t.Fatal(err)
	}
	for _, f := range followers {
		f.Start()
	}
	for _, f := range followers {
		f.WaitReady()
	}
	if err := proctest.WaitFor(60*time.Second, func() bool { return !h.live(leader.id) }); err != nil {
		t.Fatalf("node %d's old registration still live: %v", leader.id, err)
	}
	leader.Start()
	leader.WaitReady()
	// The wiped node reports its new disk; the controller leaves the
	// partition offline (unclean.leader.election.enable is off).
	st := h.partition(topic, 0, 60*time.Second, func(st controlplane.PartitionState) bool {
		return st.Leader < 0 && slices.Equal(st.ISR, []int32{leader.id}) && h.live(leader.id)
	})
	t.Logf("before the request: leader %d isr %v elr %v", st.Leader, st.ISR, st.ELR)
	err := proctest.WaitFor(30*time.Second, func() bool {
		res, err := c.admin().ElectLeaders(proctest.Context(t, 10*time.Second), kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return false
		}
		r, ok := res[topic][0]
		return ok && (r.Err == nil || errors.Is(r.Err, kerr.ElectionNotNeeded))
	})
	if err != nil {
		t.Fatalf("ElectLeaders UNCLEAN: %v", err)
	}
	got := c.WaitPartition(topic, 0, 60*time.Second, func(pv proctest.Partition) bool { return pv.Leader >= 0 })
	if got.Leader == leader.id {
		t.Errorf("ElectLeaders UNCLEAN elected node %d, back with an empty disk, over replicas that hold the data", leader.id)
	}
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}
