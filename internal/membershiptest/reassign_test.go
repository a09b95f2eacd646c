package membershiptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/internal/proctest"
)

// reassignRecords is how many acks=all records each reassignment test
// writes before moving the partition.
const reassignRecords = 1000

// startMoveCluster starts nodes 1-3, creates topic with one partition,
// replication factor 3 and min.insync.replicas=2, starts node 4 (which holds
// nothing), writes reassignRecords acks=all records and returns the
// partition's replicas in assignment order (the first leads) and the
// records' offsets.
func startMoveCluster(t *testing.T, topic string) (*cluster, []int32, []int64) {
	c := startCluster(t, 1, 2, 3)
	c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	pv := c.WaitPartition(topic, 0, 30*time.Second, func(pv proctest.Partition) bool {
		return len(pv.Order) == 3 && pv.Leader == pv.Order[0]
	})
	c.addNode(4)
	return c, pv.Order, c.produce(topic, 0, reassignRecords)
}

// reassign asks for partition 0 of topic to move to target (nil cancels).
func (c *cluster) reassign(topic string, target []int32) error {
	c.t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	resp, err := c.admin().AlterPartitionAssignments(proctest.Context(c.t, 30*time.Second), req)
	if err != nil {
		return err
	}
	r := resp[topic][0]
	if r.Err != nil {
		return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
	}
	return nil
}

// reassignment returns partition 0's reassignment in progress as
// ListPartitionReassignments reports it, and whether there is one.
func (c *cluster) reassignment(topic string) (kadm.ListPartitionReassignmentsResponse, bool, error) {
	resp, err := c.admin().ListPartitionReassignments(proctest.Context(c.t, 10*time.Second), kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return kadm.ListPartitionReassignmentsResponse{}, false, err
	}
	r, ok := resp[topic][0]
	return r, ok, nil
}

// waitMoved waits until partition 0 of topic has exactly the target
// replicas, all in the ISR, a leader among them, and no reassignment in
// progress; then until the removed replicas' directories are gone.
func (c *cluster) waitMoved(topic string, old, target []int32) proctest.Partition {
	c.t.Helper()
	sorted := slices.Sorted(slices.Values(target))
	var last string
	err := proctest.WaitFor(60*time.Second, func() bool {
		r, inProgress, err := c.reassignment(topic)
		if err != nil || inProgress {
			last = fmt.Sprintf("reassignment in progress: %+v (%v)", r, err)
			return false
		}
		pv, err := c.anyLive().Partition(context.Background(), topic, 0)
		last = fmt.Sprintf("%v (%v)", pv, err)
		return err == nil && slices.Equal(pv.Replicas, sorted) && slices.Equal(pv.ISR, sorted)
	})
	if err != nil {
		c.t.Fatalf("%s-0 not moved to %v: %s", topic, target, last)
	}
	pv := c.WaitPartition(topic, 0, 30*time.Second, func(pv proctest.Partition) bool {
		return slices.Equal(pv.Replicas, sorted) && slices.Contains(target, pv.Leader)
	})
	for _, id := range old {
		if slices.Contains(target, id) {
			continue
		}
		dir := c.nodes[id].partitionDir(topic, 0)
		if err := proctest.WaitFor(30*time.Second, func() bool {
			_, err := os.Stat(dir)
			return errors.Is(err, os.ErrNotExist)
		}); err != nil {
			c.t.Fatalf("node %d still holds %s after the move: %v", id, dir, err)
		}
	}
	return pv
}

// TestReassignAwayFromLeader moves a partition off its leader, [1,2,3] ->
// [4,2,3] in role terms: the new replica starts empty, so it must catch up
// as a follower outside the ISR, and leadership may move only to an ISR
// member. Reading from the earliest offset afterwards gives every
// acknowledged record (before KIP-455's rules, none: node 4 was put in the
// ISR and made leader with an empty log, and the others truncated to it).
func TestReassignAwayFromLeader(t *testing.T) {
	const topic = "move-leader"
	c, old, offsets := startMoveCluster(t, topic)
	target := []int32{4, old[1], old[2]}
	if err := c.reassign(topic, target); err != nil {
		t.Fatal(err)
	}
	c.waitMoved(topic, old, target)
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}

// TestReassignThenPreferredElection moves [1,2,3] -> [4,1,2] while node 4
// is paused, asks ElectLeaders PREFERRED at once (refused: node 4, the
// preferred replica, is not in the ISR), resumes node 4 and waits for the
// move to complete, then asks again: node 4 leads, with every acknowledged
// record (before KIP-455's rules node 4 entered the ISR at once, the first
// election made it leader with an empty log, and every record was lost).
func TestReassignThenPreferredElection(t *testing.T) {
	const topic = "move-preferred"
	c, old, offsets := startMoveCluster(t, topic)
	resume4 := c.nodes[4].pause()
	defer resume4()
	target := []int32{4, old[0], old[1]}
	if err := c.reassign(topic, target); err != nil {
		t.Fatal(err)
	}
	early := c.electPreferred(topic)
	resume4()
	c.waitMoved(topic, old, target)
	if err := proctest.WaitFor(20*time.Second, func() bool {
		err := c.electPreferred(topic)
		return err == nil || errors.Is(err, kerr.ElectionNotNeeded)
	}); err != nil {
		t.Fatalf("ElectLeaders PREFERRED after the move: %v", c.electPreferred(topic))
	}
	c.WaitPartition(topic, 0, 30*time.Second, func(pv proctest.Partition) bool { return pv.Leader == 4 })
	c.checkRecords(topic, 0, offsets)
	if !errors.Is(early, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("ElectLeaders PREFERRED while node 4 was catching up: %v, want PREFERRED_LEADER_NOT_AVAILABLE", early)
	}
	c.CheckNoPanic()
}

// electPreferred asks ElectLeaders PREFERRED for partition 0 of topic and
// returns the partition's error.
func (c *cluster) electPreferred(topic string) error {
	c.t.Helper()
	res, err := c.admin().ElectLeaders(proctest.Context(c.t, 10*time.Second), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return err
	}
	r, ok := res[topic][0]
	if !ok {
		return errors.New("no result for the partition")
	}
	return r.Err
}

// TestReassignmentInProgressAndCancelled pauses node 4 so that it cannot
// catch up, moves [1,2,3] -> [4,2,3], and checks the reassignment in
// progress: replicas old ∪ new, adding [4], removing [1], the old leader
// still leading and holding its log. Cancelling it (a null target) returns
// the partition to [1,2,3]; node 4, resumed, deletes what it fetched, and
// every acknowledged record is there.
func TestReassignmentInProgressAndCancelled(t *testing.T) {
	const topic = "move-cancel"
	c, old, offsets := startMoveCluster(t, topic)
	resume4 := c.nodes[4].pause()
	defer resume4()
	target := []int32{4, old[1], old[2]}
	if err := c.reassign(topic, target); err != nil {
		t.Fatal(err)
	}
	r, inProgress, err := c.reassignment(topic)
	if err != nil {
		t.Fatal(err)
	}
	union := []int32{1, 2, 3, 4}
	if !inProgress || !slices.Equal(slices.Sorted(slices.Values(r.Replicas)), union) ||
		!slices.Equal(r.AddingReplicas, []int32{4}) || !slices.Equal(r.RemovingReplicas, []int32{old[0]}) {
		t.Fatalf("ListPartitionReassignments: in progress %v, %+v; want replicas %v adding [4] removing [%d]",
			inProgress, r, union, old[0])
	}
	pv := c.WaitPartition(topic, 0, 30*time.Second, func(pv proctest.Partition) bool { return true })
	if pv.Leader != old[0] || !slices.Equal(pv.Replicas, union) || slices.Contains(pv.ISR, 4) {
		t.Fatalf("during the move: %v; want leader %d, replicas %v, 4 outside the ISR", pv, old[0], union)
	}
	if _, err := os.Stat(c.nodes[old[0]].partitionDir(topic, 0)); err != nil {
		t.Fatalf("the replica being removed lost its log during the move: %v", err)
	}
	if err := c.reassign(topic, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if r, inProgress, err := c.reassignment(topic); err != nil || inProgress {
		t.Fatalf("after cancelling: in progress %v %+v (%v)", inProgress, r, err)
	}
	resume4()
	c.waitMoved(topic, []int32{1, 2, 3, 4}, old)
	c.checkRecords(topic, 0, offsets)
	c.CheckNoPanic()
}
