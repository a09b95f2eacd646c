package replica_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
)

// stalledRemoteLog is remote metadata whose fresh read (the one an empty
// leader of a tiered partition makes before it leads) does not answer
// until released: NATS's stream of the remote metadata electing a leader
// while one of its servers has lost its routes.
type stalledRemoteLog struct {
	release chan struct{}
	entered atomic.Int32 // reads started
	waiting atomic.Int32 // reads not answered yet
}

func (s *stalledRemoteLog) ListRemoteSegments(controlplane.TopicID, int32) []controlplane.RemoteSegment {
	return nil
}

func (s *stalledRemoteLog) FreshRemoteSegments(ctx context.Context, _ controlplane.TopicID, _ int32) ([]controlplane.RemoteSegment, error) {
	s.entered.Add(1)
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case <-s.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestEmptyLeaderTailReadHoldsNoOtherRole: an empty replica of a tiered
// partition, named leader in an epoch above 0, must read the remote tail
// before it leads (leader_tail.go). While that read cannot be answered,
// the replica must not lead and must not fetch from the leader it
// replaces, and Reconcile must go on applying every other partition's
// role. Before, Reconcile made the read itself, with a 30 s timeout, so a
// NATS stream without a leader held every role change of the node: on a
// route cut (clustertest's TestLeaderStepsDownWhenItsNATSServerIsCut) the
// new leader kept fetching from the old one for 30 s, which kept the old
// one from stepping down, and this test's Reconcile returned only once
// the read had.
func TestEmptyLeaderTailReadHoldsNoOtherRole(t *testing.T) {
	dir := t.TempDir()
	ctx := proctest.Context(t, 120*time.Second)
	st := natsStore(t, ctx, dir, 2)
	if _, err := st.CreateTopic(ctx, "tailwait", 1, 1, map[string]string{"remote.storage.enable": "true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTopic(ctx, "local", 1, 1, map[string]string{"remote.storage.enable": "false"}); err != nil {
		t.Fatal(err)
	}
	if err := st.DeregisterBroker(ctx); err != nil {
		t.Fatal(err)
	}
	// tailwait-0 (tiered): this node leads in epoch 1 (an epoch before, it
	// led elsewhere, so the remote log may hold segments). local-0: node 1
	// leads, this node follows.
	set := func(topic string, leader int32) {
		t.Helper()
		ps, ok := st.Partition(topic, 0)
		if !ok {
			t.Fatalf("no state of %s-0", topic)
		}
		ps.Replicas, ps.ISR, ps.Leader, ps.LeaderEpoch = []int32{1, 2}, []int32{1, 2}, leader, ps.LeaderEpoch+1
		if _, err := st.UpdatePartition(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	set("tailwait", 2)
	set("local", 1)
	proctest.Eventually(t, 10*time.Second, "the store to see both partitions", func() bool {
		p0, _ := st.Partition("tailwait", 0)
		p1, _ := st.Partition("local", 0)
		return p0.Leader == 2 && p0.LeaderEpoch == 1 && p1.Leader == 1 && p1.LeaderEpoch == 1
	})

	m := replica.New(managerConfig(2, "", filepath.Join(dir, "logs")), st)
	meta := &stalledRemoteLog{release: make(chan struct{})}
	m.SetRemoteTier(meta, nil, nil)
	released := false
	release := func() {
		if !released {
			released = true
			close(meta.release)
		}
	}
	t.Cleanup(release)

	if err := m.Reconcile(); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, 10*time.Second, "the empty leader of tailwait-0 to read its remote tail", func() bool {
		return meta.entered.Load() > 0
	})
	if meta.waiting.Load() == 0 {
		t.Fatal("Reconcile returned only once the remote-tail read had: it held every other partition's role meanwhile")
	}
	p0, ok := m.Local("tailwait", 0)
	if !ok || p0.IsLeader() {
		t.Fatalf("tailwait-0 open %v, leads %v before its remote tail is read; want a replica that does not lead yet", ok, ok && p0.IsLeader())
	}
	if ld, err := m.Leader("tailwait", 0); err == nil && ld != nil {
		t.Fatal("tailwait-0 is served as leader before its remote tail is read")
	}

	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(runCtx) })
	t.Cleanup(func() {
		release()
		stop()
		wg.Wait()
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	// Another partition's role change is applied while the read waits.
	set("local", 2)
	proctest.Eventually(t, 30*time.Second, "local-0's new role while tailwait-0's tail read waits", func() bool {
		p1, ok := m.Local("local", 0)
		return ok && p1.IsLeader() && p1.LeaderEpoch() == 2
	})
	if meta.waiting.Load() == 0 {
		t.Fatal("the remote-tail read ended before the test released it")
	}
	// Answered (no finished remote segment): the replica leads from 0.
	release()
	proctest.Eventually(t, 30*time.Second, "tailwait-0 to lead once its remote tail is read", func() bool {
		return p0.IsLeader() && p0.LeaderEpoch() == 1
	})
	if n := meta.entered.Load(); n != 1 {
		t.Errorf("%d remote-tail reads for one leader epoch; want 1", n)
	}
}

// TestLeaderNotOpenYetIsNotLeader: a partition the control plane names
// this node leader of, whose replica is not open here yet (a large topic's
// replicas open in the background after CreateTopics answers), is
// NOT_LEADER_OR_FOLLOWER to a producer, which franz-go retries after a
// metadata refresh, as Kafka answers for a partition its metadata knows
// and its replica manager does not host; a partition the control plane
// does not know stays UNKNOWN_TOPIC_OR_PARTITION. Before, the first was
// UNKNOWN_TOPIC_OR_PARTITION, and franz-go failed the produce after four
// tries (BenchmarkISRRejoin at 10,000 partitions).
func TestLeaderNotOpenYetIsNotLeader(t *testing.T) {
	dir := t.TempDir()
	ctx := proctest.Context(t, 60*time.Second)
	st := natsStore(t, ctx, dir, 2)
	if _, err := st.CreateTopic(ctx, "notyet", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if ps, _ := st.Partition("notyet", 0); ps.Leader != 2 {
		t.Fatalf("notyet-0 led by %d, want 2", ps.Leader)
	}
	m := replica.New(replica.Config{NodeID: 2, LogsDir: filepath.Join(dir, "logs"), TopicDefaults: map[string]string{},
		ReplicaLagTimeMax: 30 * time.Second, Logger: testnode.Logger()}, st)
	t.Cleanup(func() { m.Close() })
	// No Reconcile: the replica is not open.
	if _, err := m.Leader("notyet", 0); !errors.Is(err, partition.ErrNotLeader) {
		t.Fatalf("a partition led here and not open yet: %v, want ErrNotLeader", err)
	}
	if _, err := m.Leader("nosuch", 0); !errors.Is(err, partition.ErrUnknownTopicOrPartition) {
		t.Fatalf("a partition the control plane does not know: %v, want ErrUnknownTopicOrPartition", err)
	}
}
