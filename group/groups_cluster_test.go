package group_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestGroupCoordinatorFailover: in a 3-node cluster with a replicated
// __consumer_offsets (RF=3), stopping the node that hosts a group's
// coordinator moves the group to the new leader of its __consumer_offsets
// partition, which rebuilds the group from the partition and answers the
// same committed offsets; a consumer of the group then resumes exactly
// after them: nothing committed is consumed again (the offsets were not
// lost) and nothing produced later is skipped.
func TestGroupCoordinatorFailover(t *testing.T) {
	const topic, grp = "fo", "fog"
	nodes, seeds, adm, ctx := startCoordinatorCluster(t)
	createTopicRF(t, adm, topic, 3, 3)
	ends := testnode.ProduceN(t, seeds[0], topic, 150, "v")

	// Consume everything, committing as we go, then leave.
	cons := testnode.Client(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	first := map[string]bool{}
	for len(first) < 150 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 150", len(first))
		}
		fs.EachRecord(func(r *kgo.Record) { first[string(r.Value)] = true })
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
	before := testnode.Committed(t, adm, grp)
	for p, end := range ends {
		if o, _ := before.Lookup(topic, p); o.At != end {
			t.Fatalf("partition %d committed at %d, want %d", p, o.At, end)
		}
	}

	// The coordinator is the leader of the group's __consumer_offsets
	// partition, and every replica of that partition is in sync (RF=3), so
	// the commits survive the loss of its node.
	offsetsPart := group.PartitionFor(grp, 50)
	coord := adm.FindGroupCoordinators(ctx, grp)[grp]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	victim := coord.NodeID
	proctest.Eventually(t, 20*time.Second, "__consumer_offsets replicated to 3 in-sync replicas", func() bool {
		m, err := adm.Metadata(ctx, group.OffsetsTopic)
		if err != nil {
			return false
		}
		p := m.Topics[group.OffsetsTopic].Partitions[offsetsPart]
		return p.Leader == victim && len(p.Replicas) == 3 && len(p.ISR) == 3
	})
	t.Logf("coordinator of %s is node %d (leader of %s-%d); stopping it", grp, victim, group.OffsetsTopic, offsetsPart)
	if err := nodes[victim-1].Close(ctx); err != nil {
		t.Fatal(err)
	}

	survivors, adm2 := survivorsOf(t, seeds, victim)
	var newCoord int32
	proctest.Eventually(t, 60*time.Second, "a new coordinator that leads the offsets partition", func() bool {
		c := adm2.FindGroupCoordinators(ctx, grp)[grp]
		if c.Err != nil || c.NodeID == victim {
			return false
		}
		m, err := adm2.Metadata(ctx, group.OffsetsTopic)
		if err != nil {
			return false
		}
		newCoord = c.NodeID
		return m.Topics[group.OffsetsTopic].Partitions[offsetsPart].Leader == c.NodeID
	})
	t.Logf("new coordinator: node %d", newCoord)
	after := testnode.Committed(t, adm2, grp)
	for p, end := range ends {
		if o, ok := after.Lookup(topic, p); !ok || o.At != end {
			t.Fatalf("after failover partition %d committed at %+v, want %d", p, o, end)
		}
	}

	// A consumer of the group resumes at the committed offsets: it sees
	// every record produced after them, and none before.
	const more = 60
	testnode.ProduceN(t, survivors[0], topic, more, "w")
	cons2 := testnode.Client(t, survivors[0], kgo.SeedBrokers(survivors...), kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6*time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	second := map[string]bool{}
	for len(second) < more {
		fs := cons2.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("resumed consumer saw %d of %d new records", len(second), more)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				t.Fatalf("record %s-%d@%d (%s) consumed again: committed offsets lost", r.Topic, r.Partition, r.Offset, r.Value)
			}
			second[string(r.Value)] = true
		})
	}
	for i := range more {
		if v := fmt.Sprintf("w-%d", i); !second[v] {
			t.Fatalf("record %s skipped", v)
		}
	}
	// And it can commit through the new coordinator.
	if err := cons2.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	final := testnode.Committed(t, adm2, grp)
	var total int64
	for p, end := range ends {
		o, _ := final.Lookup(topic, p)
		total += o.At - end
	}
	if total != more {
		t.Fatalf("commits through the new coordinator advanced by %d, want %d", total, more)
	}
}

func createTopicRF(t *testing.T, adm *kadm.Client, topic string, partitions int32, rf int16) {
	t.Helper()
	resp, err := adm.CreateTopic(proctest.Context(t, 20*time.Second), partitions, rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// TestGroupCoordinatorFailoverLiveMembers: two members keep consuming and
// committing while the node hosting their coordinator stops; they find the
// new coordinator, the group carries on there, and every record produced
// before and after the failover is consumed (at least once) and committed.
func TestGroupCoordinatorFailoverLiveMembers(t *testing.T) {
	const topic, grp, per = "folive", "folive-g", 200
	nodes, seeds, adm, ctx := startCoordinatorCluster(t)
	createTopicRF(t, adm, topic, 4, 3)
	seen := testnode.NewSeenSet()
	ends := testnode.Ends{}
	produce := func(addr, tag string) { ends.Produce(t, addr, topic, per, tag) }
	// caughtUp reports whether every record of tags was consumed and every
	// partition's commit reached its end.
	caughtUp := func(adm *kadm.Client, tags ...string) bool {
		if seen.Missing(tags, per) > 0 {
			return false
		}
		resp, err := adm.FetchOffsets(ctx, grp)
		if err != nil || resp.Error() != nil {
			return false
		}
		for p, end := range ends {
			if o, ok := resp.Lookup(topic, p); !ok || o.At != end {
				return false
			}
		}
		return true
	}
	for range 2 {
		testnode.StartMember(t, seeds[0], grp, topic, kgo.CooperativeStickyBalancer(), seen, kgo.SeedBrokers(seeds...))
	}
	produce(seeds[0], "a")
	testnode.WaitStable(t, adm, grp, 2)
	proctest.Eventually(t, 60*time.Second, "a consumed and committed", func() bool { return caughtUp(adm, "a") })

	coord := adm.FindGroupCoordinators(ctx, grp)[grp]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	victim := coord.NodeID
	t.Logf("coordinator of %s is node %d; stopping it under two live members", grp, victim)
	if err := nodes[victim-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	survivors, adm2 := survivorsOf(t, seeds, victim)
	produce(survivors[0], "b")
	proctest.Eventually(t, 90*time.Second, "a and b consumed and committed through the new coordinator", func() bool {
		return caughtUp(adm2, "a", "b")
	})
	if c := adm2.FindGroupCoordinators(ctx, grp)[grp]; c.Err != nil || c.NodeID == victim {
		t.Fatalf("coordinator after failover: node %d, %v", c.NodeID, c.Err)
	}
	testnode.WaitStable(t, adm2, grp, 2)
}

// survivorsOf returns the addresses in seeds (node i+1's at i) but
// victim's, and an admin client seeded with them.
func survivorsOf(t *testing.T, seeds []string, victim int32) ([]string, *kadm.Client) {
	t.Helper()
	var survivors []string
	for i, s := range seeds {
		if int32(i+1) != victim {
			survivors = append(survivors, s)
		}
	}
	return survivors, kadm.NewClient(testnode.Client(t, survivors[0], kgo.SeedBrokers(survivors...)))
}

// startCoordinatorCluster starts three nodes (2 s broker sessions, a
// default replication factor of 3, so that __consumer_offsets has three
// replicas) and waits until node 1 sees them all. It returns the nodes,
// their Kafka addresses (node i+1's at i), an admin client seeded with
// them and a proctest.Context of 120 s.
func startCoordinatorCluster(t *testing.T) ([]*broker.Node, []string, *kadm.Client, context.Context) {
	t.Helper()
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second),
		func(c *config.Broker) { c.DefaultReplicationFactor = 3 })
	ctx := proctest.Context(t, 120*time.Second)
	seeds, adm := testnode.SeededAdmin(t, ctx, nodes)
	return nodes, seeds, adm, ctx
}
