package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestClusterRolesAndElections: three nodes on one NATS agree on metadata,
// refuse produce where they do not lead, move leadership on a controlled
// shutdown, and serve ElectLeaders and reassignments.
func TestClusterRolesAndElections(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second))
	cl := testnode.Client(t, nodes[0].KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 60*time.Second)
	proctest.Eventually(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3 && m.Controller > 0
	})
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "ha"); err != nil {
		t.Fatal(err)
	}
	// Every node tells the same truth.
	var first kadm.Metadata
	for i, n := range nodes {
		m, err := kadm.NewClient(testnode.Client(t, n.KafkaAddr())).Metadata(ctx, "ha")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = m
			continue
		}
		for p, pd := range m.Topics["ha"].Partitions {
			if f := first.Topics["ha"].Partitions[p]; f.Leader != pd.Leader || f.LeaderEpoch != pd.LeaderEpoch {
				t.Fatalf("node %d disagrees on partition %d: %+v vs %+v", i+1, p, pd, f)
			}
		}
	}
	// A produce sent straight to a non-leader gets NOT_LEADER_OR_FOLLOWER.
	pd := first.Topics["ha"].Partitions[0]
	var other *broker.Node
	for i, n := range nodes {
		if int32(i+1) != pd.Leader {
			other = n
			break
		}
	}
	direct := testnode.Client(t, other.KafkaAddr())
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "ha", testnode.TopicID(t, cl, "ha")
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = testnode.OneRecordBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := direct.Broker(int(otherID(nodes, other))).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: code %d", code)
	}
	// Produce through the client works (it routes to leaders).
	prod := testnode.Client(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic("ha"))
	if err := prod.ProduceSync(ctx, testnode.Records("ha", 60, "c")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Reassign partition 0 to a single replica elsewhere, then elect preferred leaders.
	target := []int32{otherID(nodes, other)}
	ra := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rat := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rat.Topic = "ha"
	rap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rap.Replicas = target
	rat.Partitions = append(rat.Partitions, rap)
	ra.Topics = append(ra.Topics, rat)
	// AlterPartitionReassignments v1 (KIP-860): a change of the replication
	// factor (3 to 1) is refused when not allowed, and nothing moves.
	ra.AllowReplicationFactorChange = false
	raResp, err := ra.RequestWith(ctx, cl)
	if err != nil || raResp.Version != 1 || raResp.AllowReplicationFactorChange ||
		raResp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("reassign 3 replicas to 1 with AllowReplicationFactorChange false: %v %+v", err, raResp)
	}
	if st, _ := nodes[0].Store().Partition("ha", 0); len(st.Replicas) != 3 || st.Reassigning() {
		t.Fatalf("a refused reassignment moved the partition: %+v", st)
	}
	ra.AllowReplicationFactorChange = true
	raResp, err = ra.RequestWith(ctx, cl)
	if err != nil || raResp.Topics[0].Partitions[0].ErrorCode != 0 || !raResp.AllowReplicationFactorChange {
		t.Fatalf("reassign: %v %+v", err, raResp)
	}
	proctest.Eventually(t, 10*time.Second, "partition 0 led by its only replica", func() bool {
		m, err := adm.Metadata(ctx, "ha")
		p := m.Topics["ha"].Partitions[0]
		return err == nil && p.Leader == target[0] && len(p.Replicas) == 1 && p.LeaderEpoch == pd.LeaderEpoch+1
	})
	er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"ha": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := er["ha"][0]; r.Err != kerr.ElectionNotNeeded {
		t.Fatalf("preferred election on a single-replica partition: %v", r.Err)
	}

	// Controlled shutdown of a node: its partitions get other leaders, with new epochs.
	before, _ := adm.Metadata(ctx, "ha")
	victim := int32(3)
	if err := nodes[victim-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, 20*time.Second, "no partition led by the stopped node", func() bool {
		m, err := adm.Metadata(ctx, "ha")
		if err != nil || len(m.Brokers) != 2 {
			return false
		}
		for _, p := range m.Topics["ha"].Partitions {
			if p.Leader == victim {
				return false
			}
		}
		return true
	})
	after, _ := adm.Metadata(ctx, "ha")
	for p, b := range before.Topics["ha"].Partitions {
		a := after.Topics["ha"].Partitions[p]
		if b.Leader == victim && len(b.Replicas) > 1 && a.LeaderEpoch <= b.LeaderEpoch {
			t.Fatalf("partition %d moved leader without a new epoch: %d -> %d", p, b.LeaderEpoch, a.LeaderEpoch)
		}
	}
}

func otherID(nodes []*broker.Node, n *broker.Node) int32 {
	for i, x := range nodes {
		if x == n {
			return int32(i + 1)
		}
	}
	return -1
}
