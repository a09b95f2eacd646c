package groupstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
)

// commitOffset sends a simple OffsetCommit (no member, generation -1) of
// topic-0 (whose id is topicID) at offset to node id.
func (c *cluster) commitOffset(ctx context.Context, id int32, grp, topic string, topicID [16]byte, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = grp, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID // by name to v9, by id from v10
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.request(ctx, id, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.OffsetCommitResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return fmt.Errorf("OffsetCommit answer %+v", r.Topics)
	}
	return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
}

// fetchOffset asks node id for grp's committed offset of topic-0 (-1: none).
func (c *cluster) fetchOffset(ctx context.Context, id int32, grp, topic string, topicID [16]byte) (int64, error) {
	// The client sends the highest version both sides support: fill the
	// fields of v0-v7 and v8, read the answer of either.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = grp
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = grp
	rgt := kmsg.NewOffsetFetchRequestGroupTopic()
	rgt.Topic, rgt.TopicID, rgt.Partitions = topic, topicID, []int32{0} // by name to v9, by id from v10
	rg.Topics = append(rg.Topics, rgt)
	req.Groups = append(req.Groups, rg)
	resp, err := c.request(ctx, id, req)
	if err != nil {
		return -1, err
	}
	r := resp.(*kmsg.OffsetFetchResponse)
	if r.Version >= 8 {
		if len(r.Groups) != 1 || len(r.Groups[0].Topics) != 1 || len(r.Groups[0].Topics[0].Partitions) != 1 {
			if len(r.Groups) == 1 && r.Groups[0].ErrorCode != 0 {
				return -1, kerr.ErrorForCode(r.Groups[0].ErrorCode)
			}
			return -1, fmt.Errorf("OffsetFetch answer %+v", r.Groups)
		}
		if err := kerr.ErrorForCode(r.Groups[0].ErrorCode); err != nil {
			return -1, err
		}
		p := r.Groups[0].Topics[0].Partitions[0]
		return p.Offset, kerr.ErrorForCode(p.ErrorCode)
	}
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return -1, err
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("OffsetFetch answer %+v", r.Topics)
	}
	p := r.Topics[0].Partitions[0]
	return p.Offset, kerr.ErrorForCode(p.ErrorCode)
}

// committer commits offsets 1, 2, 3, ... of one group, one at a time, to
// whichever node is the coordinator, and records the highest one answered
// without error.
type committer struct {
	c          *cluster
	grp, topic string
	topicID    [16]byte
	acked      atomic.Int64 // highest offset whose commit was answered OK
	tries      atomic.Int64
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

func (c *cluster) startCommitter(grp, topic string, topicID [16]byte) *committer {
	ctx, cancel := context.WithCancel(context.Background())
	cm := &committer{c: c, grp: grp, topic: topic, topicID: topicID, cancel: cancel}
	cm.wg.Add(1)
	go func() { // ends on stop
		defer cm.wg.Done()
		coord := int32(-1)
		for next := int64(1); next < 1_000_000 && ctx.Err() == nil; {
			if coord < 0 {
				var err error
				if coord, err = c.coordinator(ctx, grp); err != nil {
					coord = -1
					sleepCtx(ctx, 20*time.Millisecond)
					continue
				}
			}
			cm.tries.Add(1)
			if err := c.commitOffset(ctx, coord, grp, topic, topicID, next); err != nil {
				coord = -1 // find it again; the same offset is committed again
				sleepCtx(ctx, 20*time.Millisecond)
				continue
			}
			cm.acked.Store(next)
			next++
		}
	}()
	c.t.Cleanup(cm.stop)
	return cm
}

// sleepCtx waits d or until ctx ends (a retry pause, not a test wait).
func sleepCtx(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

func (cm *committer) stop() { cm.cancel(); cm.wg.Wait() }

// waitAcked waits until n more commits are answered.
func (cm *committer) waitAcked(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	from := cm.acked.Load()
	if err := proctest.WaitFor(d, func() bool { return cm.acked.Load() >= from+n }); err != nil {
		t.Fatalf("commits stalled at offset %d (%d tries): %v", cm.acked.Load(), cm.tries.Load(), err)
	}
}

// TestCommittedOffsetsSurviveCoordinatorKill commits a group's offsets
// without pause while the node that coordinates the group is killed with
// SIGKILL, three times (each time restarted and back in sync before the
// next). OffsetFetch, asked of whichever node coordinates the group, never
// answers less than the highest commit acknowledged before it was sent:
// the first answer of the new coordinator holds the last commit the old
// one acknowledged, and committed offsets never go backwards.
//
// Before the fix this failed: __consumer_offsets was created with the
// broker's default replication factor (1), and after the kill the group
// had no coordinator (COORDINATOR_NOT_AVAILABLE) for as long as the node
// was down; with RF=3, the new coordinator loaded its partition only up to
// its high watermark, which lags the log end right after an election.
func TestCommittedOffsetsSurviveCoordinatorKill(t *testing.T) {
	const grp, topic, rounds = "survivor", "orders", 3
	c := startCluster(t)
	ctx := proctest.Context(t, 5*time.Minute)
	p := group.PartitionFor(grp, 50)
	if err := proctest.WaitFor(30*time.Second, func() bool { _, err := c.coordinator(ctx, grp); return err == nil }); err != nil {
		t.Fatal("no coordinator for the group: ", err)
	}
	var st proctest.Partition
	var last error
	if err := proctest.WaitFor(30*time.Second, func() bool {
		st, last = c.partition(ctx, 1, group.OffsetsTopic, p)
		return last == nil
	}); err != nil {
		t.Fatalf("%s-%d not in node 1's metadata: %v (%v)", group.OffsetsTopic, p, err, last)
	}
	if len(st.Order) != 3 {
		t.Fatalf("%s-%d has replicas %v, want 3 (offsets.topic.replication.factor)", group.OffsetsTopic, p, st.Order)
	}
	c.waitInSync(group.OffsetsTopic, p, 3, 30*time.Second)

	// The committed topic exists: OffsetCommit and OffsetFetch v10 name it
	// by its id.
	acl, err := kgo.NewClient(kgo.SeedBrokers(c.node(1).Kafka(), c.node(2).Kafka(), c.node(3).Kafka()))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	if resp, err := kadm.NewClient(acl).CreateTopic(ctx, 1, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	var topicID [16]byte
	if err := proctest.WaitFor(30*time.Second, func() bool {
		topicID, err = proctest.TopicID(ctx, acl, topic)
		return err == nil
	}); err != nil {
		t.Fatalf("id of %s: %v", topic, err)
	}
	cm := c.startCommitter(grp, topic, topicID)
	cm.waitAcked(t, 50, 30*time.Second)

	// The checker asks the coordinator for the committed offset and checks
	// it against what was acknowledged before the question was sent.
	var (
		checks, behind atomic.Int64
		firstBad       atomic.Value // string
	)
	checkCtx, stopCheck := context.WithCancel(ctx)
	var checkWG sync.WaitGroup
	checkWG.Add(1)
	go func() { // ends on stopCheck
		defer checkWG.Done()
		for i := 0; i < 1_000_000 && checkCtx.Err() == nil; i++ {
			floor := cm.acked.Load()
			coord, err := c.coordinator(checkCtx, grp)
			if err == nil {
				var got int64
				if got, err = c.fetchOffset(checkCtx, coord, grp, topic, topicID); err == nil {
					checks.Add(1)
					if got < floor {
						behind.Add(1)
						firstBad.CompareAndSwap(nil, fmt.Sprintf("node %d answered %d after %d was acknowledged", coord, got, floor))
					}
				}
			}
			sleepCtx(checkCtx, 10*time.Millisecond)
		}
	}()

	for round := 1; round <= rounds; round++ {
		victim := c.waitInSync(group.OffsetsTopic, p, 3, 60*time.Second)
		cm.waitAcked(t, 20, 30*time.Second)
		coord, err := c.coordinator(ctx, grp)
		if err != nil || coord != victim {
			t.Fatalf("round %d: coordinator %d (%v), leader of %s-%d %d", round, coord, err, group.OffsetsTopic, p, victim)
		}
		c.node(victim).Kill()
		atKill := cm.acked.Load()
		// The new coordinator's first answer holds every acknowledged commit.
		var first int64 = -1
		var newCoord int32
		var last error
		if err := proctest.WaitFor(60*time.Second, func() bool {
			if newCoord, last = c.coordinator(ctx, grp); last != nil || newCoord == victim {
				return false
			}
			first, last = c.fetchOffset(ctx, newCoord, grp, topic, topicID)
			return last == nil
		}); err != nil {
			t.Fatalf("round %d: no OffsetFetch answer after the kill of node %d: %v (last: %v)", round, victim, err, last)
		}
		if first < atKill {
			t.Fatalf("round %d: the new coordinator (node %d) answered %d; %d was acknowledged before the kill of node %d",
				round, newCoord, first, atKill, victim)
		}
		cm.waitAcked(t, 20, 60*time.Second) // commits go on with two nodes
		t.Logf("round %d: killed coordinator %d at commit %d; node %d answered %d first; acknowledged now %d",
			round, victim, atKill, newCoord, first, cm.acked.Load())
		c.node(victim).Start()
		c.node(victim).WaitReady()
	}
	c.waitInSync(group.OffsetsTopic, p, 3, 60*time.Second)
	cm.waitAcked(t, 20, 30*time.Second)
	stopCheck()
	checkWG.Wait()
	cm.stop()
	if v := firstBad.Load(); v != nil {
		t.Fatalf("committed offset went backwards %d times in %d checks; first: %s", behind.Load(), checks.Load(), v)
	}
	if checks.Load() < 10 {
		t.Fatalf("only %d OffsetFetch answers checked", checks.Load())
	}
	final, err := c.fetchOffset(ctx, mustCoordinator(t, c, ctx, grp), grp, topic, topicID)
	if err != nil || final < cm.acked.Load() {
		t.Fatalf("final committed offset %d (%v), acknowledged %d", final, err, cm.acked.Load())
	}
	t.Logf("%d commits acknowledged (%d tries), %d OffsetFetch answers checked, none behind", cm.acked.Load(), cm.tries.Load(), checks.Load())
	c.CheckNoPanic()
}

func mustCoordinator(t *testing.T, c *cluster, ctx context.Context, grp string) int32 {
	t.Helper()
	var id int32
	err := proctest.WaitFor(30*time.Second, func() bool {
		var err error
		id, err = c.coordinator(ctx, grp)
		return err == nil
	})
	if err != nil {
		t.Fatal(errors.Join(errors.New("no coordinator"), err))
	}
	return id
}
