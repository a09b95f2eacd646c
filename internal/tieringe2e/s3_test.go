package tieringe2e

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// numRecords is the size of the main end-to-end run (issue 4: at least 100k).
const numRecords = 100_000

// TestColdReplayS3 produces 100k records into 64 KiB segments of a node
// backed by versitygw, waits until most of them are only in the bucket,
// then replays from offset 0 with franz-go (the node restarted half-way)
// and with librdkafka, looks up a timestamp in a remote segment, and checks
// the bucket through minio-go against the remote metadata.
func TestColdReplayS3(t *testing.T) {
	env := startS3(t)
	dir := t.TempDir()
	n := startNode(t, dir, env.srv.Endpoint, env.bucket)
	const topic = "cold"
	createTopic(t, n.KafkaAddr(), topic, 1, tieredTopicConfig)
	produceRange(t, n.KafkaAddr(), topic, 0, numRecords)
	start := time.Now()
	waitTiered(t, n, topic, 10, numRecords/2)
	t.Logf("tiered %d segments in %v after the produce", len(finishedSegments(n, topic)), time.Since(start))

	addr := n.KafkaAddr()
	if got := listOffset(t, addr, topic, -2); got != 0 {
		t.Fatalf("earliest = %d, want 0 (the log start is in the bucket)", got)
	}
	localStart := listOffset(t, addr, topic, -4)
	if localStart < numRecords/2 {
		t.Fatalf("EARLIEST_LOCAL = %d, want >= %d", localStart, numRecords/2)
	}
	if lt := listOffset(t, addr, topic, -5); lt < localStart-1 {
		t.Fatalf("LATEST_TIERED = %d, below the local log start %d", lt, localStart)
	}
	checkTierStatus(t, n, topic, numRecords/2, numRecords)

	const probe = 12_345 // a remote segment's offset
	if got := listOffset(t, addr, topic, baseTime.Add(probe*time.Millisecond).UnixMilli()); got != probe {
		t.Fatalf("ListOffsets(timestamp of record %d) = %d", probe, got)
	}

	// franz-go from 0, the node restarted a quarter of the way.
	half := int64(numRecords / 4)
	consumeFranz(t, addr, topic, 0, half)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := n.Close(ctx); err != nil {
		t.Logf("close: %v", err)
	}
	cancel()
	n = startNode(t, dir, env.srv.Endpoint, env.bucket)
	addr = n.KafkaAddr()
	consumeFranz(t, addr, topic, half, numRecords)
	if got := listOffset(t, addr, topic, -2); got != 0 {
		t.Fatalf("after restart: earliest = %d, want 0", got)
	}
	if got := listOffset(t, addr, topic, baseTime.Add(probe*time.Millisecond).UnixMilli()); got != probe {
		t.Fatalf("after restart: ListOffsets(timestamp of record %d) = %d", probe, got)
	}

	t.Logf("franz-go replay with a restart done at %v", time.Since(start))
	consumeConfluent(t, addr, topic, numRecords)
	t.Logf("librdkafka replay done at %v", time.Since(start))

	mc := minioClient(t, env.srv.Endpoint)
	waitBucketMatches(t, 30*time.Second, n, mc, env.bucket)
}

// consumeConfluent reads partition 0 of topic from the beginning with
// librdkafka (confluent-kafka-go) and checks every record up to total.
func consumeConfluent(t *testing.T, addr, topic string, total int64) {
	t.Helper()
	// confluent-kafka-go wants a group.id even with Assign; nothing is committed.
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": addr, "broker.address.family": "v4",
		"log_level": 3, "group.id": "tieringe2e-unused", "enable.auto.commit": false,
		"enable.auto.offset.store": false, "fetch.wait.max.ms": 200})
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	deadline := time.Now().Add(120 * time.Second)
	var next int64
	for next < total {
		if time.Now().After(deadline) {
			t.Fatalf("librdkafka consume: reached offset %d of %d before the deadline", next, total)
		}
		switch ev := c.Poll(200).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("librdkafka consume: %v", ev.TopicPartition.Error)
			}
			off := int64(ev.TopicPartition.Offset)
			if off != next {
				t.Fatalf("librdkafka consume: offset %d, want %d", off, next)
			}
			var hs []kgo.RecordHeader
			for _, h := range ev.Headers {
				hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			checkRecord(t, off, ev.Key, ev.Value, hs, ev.Timestamp)
			next++
		case kafka.Error:
			if ev.IsFatal() {
				t.Fatalf("librdkafka consumer: fatal %v", ev)
			}
			t.Logf("librdkafka consumer: %v", ev)
		}
	}
}
