package broker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment/vfs"
)

// failingDisks gives each of n nodes a filesystem (the operating system's,
// through vfs.WithErrors) whose fsyncs of files and directories of topic
// fail with err once that node's switch is on.
func failingDisks(n int, topic string, err error) ([]vfs.FS, []*atomic.Bool) {
	fss, on := make([]vfs.FS, n), make([]*atomic.Bool, n)
	for i := range fss {
		fail := new(atomic.Bool)
		on[i] = fail
		fss[i] = vfs.WithErrors(vfs.Default, func(op vfs.Op) error {
			if op.Kind == vfs.OpSync && fail.Load() && strings.Contains(op.Path, topic) {
				return err
			}
			return nil
		})
	}
	return fss, on
}

// fsyncingTopic waits until the three nodes are registered, creates topic
// on them (RF 3, flush.messages=1: every append fsyncs,
// min.insync.replicas=2) and waits until its three replicas are in sync;
// it returns the nodes' Kafka addresses, an admin client of them and the
// partition's leader.
func fsyncingTopic(t *testing.T, ctx context.Context, nodes []*broker.Node, topic string) ([]string, *kadm.Client, int32) {
	t.Helper()
	seeds, adm := testnode.SeededAdmin(t, ctx, nodes)
	one, two := "1", "2"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"flush.messages": &one, "min.insync.replicas": &two}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	var leader int32
	proctest.Eventually(t, 30*time.Second, "3 in-sync replicas", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		p := m.Topics[topic].Partitions[0]
		leader = p.Leader
		return p.Leader > 0 && len(p.ISR) == 3
	})
	return seeds, adm, leader
}

// TestFsyncFailureMovesLeadership: on a topic with flush.messages=1 (every
// append fsyncs), the leader's disk starts failing fsync. Its log goes
// offline (no more appends, KAFKA_STORAGE_ERROR to producers), leadership
// moves to another in-sync replica without waiting for a broker session
// to expire, and the idempotent producer's record, retried there, is in
// the partition exactly once.
func TestFsyncFailureMovesLeadership(t *testing.T) {
	const topic = "fsyncfail"
	injected := errors.New("injected EIO")
	disks, failing := failingDisks(3, topic, injected)
	nodes, _ := testnode.StartClusterOnFS(t, t.TempDir(), disks, testnode.WithSession(30*time.Second))
	ctx := proctest.Context(t, 120*time.Second)
	seeds, adm, leader := fsyncingTopic(t, ctx, nodes, topic)
	prod := testnode.Client(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The leader's disk fails every fsync of this partition from now on.
	failing[leader-1].Store(true)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatalf("produce while the leader's fsync fails: %v (the client retries until another replica leads)", err)
	}
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Topics[topic].Partitions[0]; p.Leader == leader || p.Leader < 1 {
		t.Fatalf("leader %d after node %d's fsync failed", p.Leader, leader)
	}
	cons := testnode.Client(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	for seen["during"] == 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("records read: %v", seen)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	if seen["before"] != 1 || seen["during"] != 1 {
		t.Fatalf("records read back: %v, want each once", seen)
	}
}

// TestFollowerLogOfflineStopsFollowing: a follower whose log goes offline
// (an fsync of its replica fails) stops fetching that partition and leaves
// its ISR at once (the node reports the replica offline; the controller
// counts it dead for that partition), while the leader keeps taking
// acks=all writes with the two others. Before, the follower's fetcher went
// on fetching into a log that takes no batches, and it stayed in the ISR
// until replica.lag.time.max ran out.
func TestFollowerLogOfflineStopsFollowing(t *testing.T) {
	const topic = "followerfsync"
	disks, failing := failingDisks(3, topic, errors.New("injected EIO"))
	nodes, _ := testnode.StartClusterOnFS(t, t.TempDir(), disks, testnode.WithSession(30*time.Second),
		func(c *config.Broker) { c.ReplicaLagTimeMax = 5 * time.Minute })
	ctx := proctest.Context(t, 120*time.Second)
	seeds, adm, leader := fsyncingTopic(t, ctx, nodes, topic)
	follower := leader%3 + 1
	fnode := nodes[follower-1]
	fetching := func() bool {
		for _, f := range fnode.Replicas().Fetchers() {
			if slices.Contains(f.Partitions, topic+"-0") {
				return true
			}
		}
		return false
	}
	prod := testnode.Client(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, 10*time.Second, "the follower's fetcher", fetching)

	// The follower's disk fails every fsync of this partition from now on.
	failing[follower-1].Store(true)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatalf("produce while a follower's fsync fails: %v", err)
	}
	rep, ok := fnode.Replicas().Local(topic, 0)
	if !ok {
		t.Fatalf("node %d has no replica of %s-0", follower, topic)
	}
	proctest.Eventually(t, 10*time.Second, "the follower's log to go offline", func() bool { return rep.LogErr() != nil })
	proctest.Eventually(t, 10*time.Second, "the follower to stop fetching its offline log", func() bool { return !fetching() })
	proctest.Eventually(t, 10*time.Second, "the follower out of the ISR", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		p := m.Topics[topic].Partitions[0]
		return p.Leader == leader && len(p.ISR) == 2 && !slices.Contains(p.ISR, follower)
	})
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce with the follower's log offline: %v", err)
	}
}
