package fetch_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment"
)

// TestNewLeaderAnswersItsEpochBeforeWriting: after a clean failover with no
// write since, the new leader's OffsetForLeaderEpoch places its own epoch,
// and an epoch between the old and the new, at its log end, as Kafka's does
// (its epoch enters the history at election), where Shale used to answer
// UNDEFINED until the first write. The old epoch ends there too.
func TestNewLeaderAnswersItsEpochBeforeWriting(t *testing.T) {
	const topic = "epochs"
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second))
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	two := "2"
	if r, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var lid int32
	proctest.Eventually(t, 20*time.Second, "a leader", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil || len(m.Topics[topic].Partitions) != 1 {
			return false
		}
		lid = m.Topics[topic].Partitions[0].Leader
		return lid > 0
	})
	cl := testnode.Client(t, nodes[lid-1].KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctx, testnode.Records(topic, 25, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	old := testnode.Replica(nodes[lid-1], topic, 0)
	e0, end := old.LeaderEpoch(), old.Log().LogEndOffset()
	proctest.Eventually(t, 20*time.Second, "every replica caught up", func() bool {
		for _, n := range nodes {
			if r := testnode.Replica(n, topic, 0); r == nil || r.Log().LogEndOffset() != end || r.HighWatermark() != end {
				return false
			}
		}
		return true
	})

	if err := nodes[lid-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	var nid int32
	proctest.Eventually(t, 30*time.Second, "a new leader", func() bool {
		for i, n := range nodes {
			if int32(i+1) == lid {
				continue
			}
			if r := testnode.Replica(n, topic, 0); r != nil && r.IsLeader() && r.LeaderEpoch() > e0 {
				nid = int32(i + 1)
				return true
			}
		}
		return false
	})
	rep := testnode.Replica(nodes[nid-1], topic, 0)
	e1 := rep.LeaderEpoch()
	if got := rep.Log().LogEndOffset(); got != end {
		t.Fatalf("new leader's log end %d, want %d (no write since the failover)", got, end)
	}
	if es := rep.Log().Epochs(); es[len(es)-1] != (segment.EpochEntry{Epoch: e1, StartOffset: end}) {
		t.Fatalf("new leader's history %v, want a last entry of epoch %d at %d", es, e1, end)
	}

	raw := testnode.Client(t, nodes[nid-1].KafkaAddr())
	ask := func(epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1 // a consumer's question (KIP-320), answered by the leader
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = e1, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), raw.Broker(int(nid)))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetForLeaderEpoch(%d): %+v", epoch, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	want := map[int32]int32{e1: e1, e0: e0} // requested -> answered epoch, all ending at end
	for e := e0 + 1; e < e1; e++ {
		want[e] = e0
	}
	for requested, epoch := range want {
		if a := ask(requested); a.ErrorCode != 0 || a.LeaderEpoch != epoch || a.EndOffset != end {
			t.Fatalf("OffsetForLeaderEpoch(%d) after a failover with no write (epochs %d -> %d): error %d, epoch %d, end %d; want epoch %d ending at %d",
				requested, e0, e1, a.ErrorCode, a.LeaderEpoch, a.EndOffset, epoch, end)
		}
	}
	if a := ask(e1 + 1); a.ErrorCode != 0 || a.LeaderEpoch != -1 || a.EndOffset != -1 {
		t.Fatalf("OffsetForLeaderEpoch(%d), above the leader's: %+v, want UNDEFINED", e1+1, a)
	}
}
