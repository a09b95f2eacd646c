package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testlog"
	"github.com/shale-io/shale/internal/testnode"
)

// rawProduce sends one batch to topic-0 (by name and id, so that any
// version works) straight to node id, and returns its answer.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, id int32, topic string, topicID [16]byte) *kmsg.ProduceResponse {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = testnode.OneRecordBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		t.Fatalf("produce to node %d: %v", id, err)
	}
	return resp.(*kmsg.ProduceResponse)
}

// rawFetch fetches topic-0 (by name and id) from offset 0 at the given
// current leader epoch (-1: none) straight from node id.
func rawFetch(t *testing.T, ctx context.Context, cl *kgo.Client, id int32, topic string, topicID [16]byte, epoch int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = epoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		t.Fatalf("fetch from node %d: %v", id, err)
	}
	return resp.(*kmsg.FetchResponse)
}

// endpointOf is node n's Kafka address as NodeEndpoints carry it.
func endpointOf(t *testing.T, n *broker.Node) (string, int32) {
	t.Helper()
	host, port, err := net.SplitHostPort(n.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, int32(p)
}

// checkHint fails unless a partition answered want carries CurrentLeader
// leader at epoch, and the answer's endpoints hold exactly the leader's.
func checkHint(t *testing.T, what string, code, wantCode int16, leader, epoch, wantLeader, wantEpoch int32, ids []int32, hosts []string, ports []int32, n *broker.Node) {
	t.Helper()
	host, port := endpointOf(t, n)
	if code != wantCode || leader != wantLeader || epoch != wantEpoch || len(ids) != 1 || ids[0] != wantLeader || hosts[0] != host || ports[0] != port {
		t.Fatalf("%s: %v, CurrentLeader %d at epoch %d, endpoints %v %v %v; want %v, leader %d at epoch %d, endpoint %s:%d",
			what, kerr.ErrorForCode(code), leader, epoch, ids, hosts, ports, kerr.ErrorForCode(wantCode), wantLeader, wantEpoch, host, port)
	}
}

func produceHint(t *testing.T, what string, resp *kmsg.ProduceResponse, leader, epoch int32, n *broker.Node) {
	t.Helper()
	p := resp.Topics[0].Partitions[0]
	var ids, ports []int32
	var hosts []string
	for _, b := range resp.Brokers {
		ids, hosts, ports = append(ids, b.NodeID), append(hosts, b.Host), append(ports, b.Port)
	}
	if resp.Version != 13 {
		t.Fatalf("%s: answered at v%d, want 13", what, resp.Version)
	}
	checkHint(t, what, p.ErrorCode, kerr.NotLeaderForPartition.Code, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, leader, epoch, ids, hosts, ports, n)
}

func fetchHint(t *testing.T, what string, resp *kmsg.FetchResponse, code int16, leader, epoch int32, n *broker.Node) {
	t.Helper()
	p := resp.Topics[0].Partitions[0]
	var ids, ports []int32
	var hosts []string
	for _, b := range resp.Brokers {
		ids, hosts, ports = append(ids, b.NodeID), append(hosts, b.Host), append(ports, b.Port)
	}
	if resp.Version != 18 {
		t.Fatalf("%s: answered at v%d, want 18", what, resp.Version)
	}
	checkHint(t, what, p.ErrorCode, code, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, leader, epoch, ids, hosts, ports, n)
}

// TestLeaderDiscovery: KIP-951 on three nodes. Produce v13 and Fetch v18
// (by topic id) sent to a node that does not lead the partition answer
// NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its
// endpoint; a fetch at an old leader epoch is FENCED_LEADER_EPOCH with the
// same; a topic id that names no topic is UNKNOWN_TOPIC_ID. Then the
// partition moves to another node while its old leader keeps running, and
// a franz-go producer and consumer that knew the old leader go on: the
// producer moves on the hint (its debug log shows the move to the new
// leader and epoch), and the consumer reads every record. Before, the
// nodes served Produce up to v12 and Fetch up to v12, with no hints.
func TestLeaderDiscovery(t *testing.T) {
	const topic = "kip951"
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second))
	ctx := proctest.Context(t, 120*time.Second)
	cl := testnode.Client(t, nodes[0].KafkaAddr())
	adm := kadm.NewClient(cl)
	proctest.Eventually(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var leader, epoch int32
	var topicID [16]byte
	proctest.Eventually(t, 20*time.Second, "a leader", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil || len(m.Topics[topic].Partitions) != 1 {
			return false
		}
		p := m.Topics[topic].Partitions[0]
		leader, epoch, topicID = p.Leader, p.LeaderEpoch, m.Topics[topic].ID
		return leader > 0 && testnode.Replica(nodes[leader-1], topic, 0) != nil && testnode.Replica(nodes[leader-1], topic, 0).IsLeader()
	})
	other := leader%3 + 1 // a node that does not lead it

	// Asked of another node: the hint names the leader.
	produceHint(t, "produce to a non-leader", rawProduce(t, ctx, cl, other, topic, topicID), leader, epoch, nodes[leader-1])
	fetchHint(t, "fetch from a non-leader", rawFetch(t, ctx, cl, other, topic, topicID, -1), kerr.NotLeaderForPartition.Code, leader, epoch, nodes[leader-1])
	unknown := rawFetch(t, ctx, cl, leader, topic, [16]byte{0xde, 0xad}, -1)
	if len(unknown.Topics) != 1 || unknown.Topics[0].TopicID != [16]byte{0xde, 0xad} || unknown.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch of an unknown topic id: %+v", unknown.Topics)
	}
	if p := rawProduce(t, ctx, cl, leader, topic, [16]byte{0xde, 0xad}).Topics[0]; p.TopicID != [16]byte{0xde, 0xad} || p.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("produce to an unknown topic id: %+v", p)
	}

	// A producer and a consumer that know the leader.
	var logs testlog.Buffer
	prod := testnode.Client(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic(topic),
		kgo.WithLogger(kgo.BasicLogger(&logs, kgo.LogLevelDebug, nil)))
	cons := testnode.Client(t, nodes[0].KafkaAddr(), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	if err := prod.ProduceSync(ctx, testnode.Records(topic, 10, "before")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	consume := func(want int) {
		t.Helper()
		for len(got) < want {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", len(got), want, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
		}
	}
	consume(10)

	// Move the partition to another node; its old leader keeps running.
	target := other
	ra := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rat := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rat.Topic = topic
	rap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rap.Replicas = []int32{target}
	rat.Partitions = append(rat.Partitions, rap)
	ra.Topics = append(ra.Topics, rat)
	if resp, err := ra.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reassign: %v %+v", err, resp)
	}
	var newEpoch int32
	proctest.Eventually(t, 30*time.Second, "the partition led by its new replica", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		p := m.Topics[topic].Partitions[0]
		newEpoch = p.LeaderEpoch
		rep := testnode.Replica(nodes[target-1], topic, 0)
		return p.Leader == target && len(p.Replicas) == 1 && p.LeaderEpoch > epoch && rep != nil && rep.IsLeader()
	})
	proctest.Eventually(t, 30*time.Second, "the old leader to know", func() bool {
		st, ok := nodes[leader-1].Store().Partition(topic, 0)
		return ok && st.Leader == target && st.LeaderEpoch == newEpoch
	})

	// The old leader names the new one.
	produceHint(t, "produce to the old leader", rawProduce(t, ctx, cl, leader, topic, topicID), target, newEpoch, nodes[target-1])
	fetchHint(t, "fetch from the old leader", rawFetch(t, ctx, cl, leader, topic, topicID, epoch), kerr.NotLeaderForPartition.Code, target, newEpoch, nodes[target-1])
	// The new leader fences the old epoch, naming itself.
	fetchHint(t, "fetch at the old epoch", rawFetch(t, ctx, cl, target, topic, topicID, epoch), kerr.FencedLeaderEpoch.Code, target, newEpoch, nodes[target-1])

	// The clients go on; the producer moved on the hint.
	if err := prod.ProduceSync(ctx, testnode.Records(topic, 10, "after")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if move := fmt.Sprintf("move:%d:%d@", target, newEpoch); !bytes.Contains([]byte(logs.String()), []byte(move)) {
		t.Errorf("the producer's debug log shows no %q: it did not move on the hint", move)
	}
	consume(20)
}
