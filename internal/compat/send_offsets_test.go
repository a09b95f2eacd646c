package compat

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestConfluentSendOffsetsOnAFreshNode is issue 22 item 5: on a node where
// no consumer group was ever used, librdkafka's transactional producer
// sends offsets to its transaction (AddOffsetsToTxn, then TxnOffsetCommit)
// and commits them. Before the fix AddOffsetsToTxn answered
// COORDINATOR_NOT_AVAILABLE until something else made __consumer_offsets,
// so SendOffsetsToTransaction failed ("Failed to add offsets to
// transaction on broker TxnCoordinator/0: Broker: Coordinator not
// available" once its context ended). Now AddOffsetsToTxn makes the topic
// as FindCoordinator does, and the group's committed offset is the one
// sent.
func TestConfluentSendOffsetsOnAFreshNode(t *testing.T) {
	const topic, grp = "confluent-send-offsets", "confluent-send-offsets-g"
	n := testnode.Start(t, t.TempDir())
	createTopic(t, n.KafkaAddr(), topic, 1)

	p, err := kafka.NewProducer(with(confluentConfig(n.KafkaAddr()),
		"transactional.id", "compat-send-offsets", "acks", "all", "transaction.timeout.ms", 60000))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	defer p.Close()
	ctx := proctest.Context(t, 2*time.Minute)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	reports := make(chan kafka.Event, 1)
	if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: ptr(topic), Partition: 0}, Value: []byte("v")}, reports); err != nil {
		t.Fatalf("Produce: %v", err)
	}
	select {
	case ev := <-reports:
		if m, ok := ev.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
			t.Fatalf("delivery report %v", ev)
		}
	case <-ctx.Done():
		t.Fatal("delivery report: deadline")
	}
	meta, err := kafka.NewTestConsumerGroupMetadata(grp)
	if err != nil {
		t.Fatal(err)
	}
	sendCtx := proctest.Context(t, 40*time.Second)
	offsets := []kafka.TopicPartition{{Topic: ptr(topic), Partition: 0, Offset: 5}}
	if err := p.SendOffsetsToTransaction(sendCtx, offsets, meta); err != nil {
		t.Fatalf("SendOffsetsToTransaction on a node where no group was used: %v", err)
	}
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("CommitTransaction: %v", err)
	}

	cl := testnode.Client(t, n.KafkaAddr())
	// CommitTransaction returns once the coordinator has prepared the
	// commit; the markers that make the offset committed follow, as in
	// Kafka. A stable fetch (KIP-447) of the partition answers
	// UNSTABLE_OFFSET_COMMIT until they are written, and the client asks
	// again. The fetch names the partition: a fetch of all the group's
	// offsets lists only committed ones (as Kafka's fetchAllOffsets), so a
	// partition whose first commit still waits for its marker is left out
	// of it, stable or not: kadm's FetchOffsets (and FetchOffsetsForTopics,
	// which fetches all and fills in -1) found no offset that way about
	// one run in ten under -race.
	var offset int64
	var code int16
	if err := proctest.Poll(30*time.Second, 20*time.Millisecond, func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = grp, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetFetch: %v", err)
		}
		offset, code = -2, resp.ErrorCode
		for _, g := range resp.Groups { // v8+
			code = g.ErrorCode
			for _, tt := range g.Topics {
				for _, p := range tt.Partitions {
					offset, code = p.Offset, max(code, p.ErrorCode)
				}
			}
		}
		for _, tt := range resp.Topics { // v7 and below
			for _, p := range tt.Partitions {
				offset, code = p.Offset, max(code, p.ErrorCode)
			}
		}
		return code != kerr.UnstableOffsetCommit.Code
	}); err != nil {
		t.Fatalf("%s-0 still UNSTABLE_OFFSET_COMMIT after 30 s", topic)
	}
	if code != 0 || offset != 5 {
		t.Fatalf("%s committed offset %d (%v), want 5", grp, offset, kerr.ErrorForCode(code))
	}
}
