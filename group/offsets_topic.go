package group

import (
	"context"
	"maps"

	"github.com/shale-io/shale/coordinator"
)

// offsetsTopicConfigs are Kafka's configs of the offsets topic
// (GroupCoordinatorService.groupMetadataTopicConfigs): compacted, the
// producer's compression, 100 MiB segments. Its min.insync.replicas is the
// broker default, as in Kafka.
var offsetsTopicConfigs = map[string]string{
	"cleanup.policy":   "compact",
	"compression.type": "producer",
	"segment.bytes":    "104857600",
}

// OffsetsTopicShape is how __consumer_offsets must be made for this
// coordinator: offsets.topic.num.partitions partitions (the count
// PartitionFor maps groups with), offsets.topic.replication.factor
// replicas capped at the brokers live now (Shale creates it on a cluster
// still smaller than that, where Kafka waits), and Kafka's configs of the
// topic. Safe for concurrent use.
func (c *Coordinator) OffsetsTopicShape() coordinator.TopicShape {
	rf := c.cfg.ReplicationFactor
	if live := c.cluster.LiveBrokers(); live >= 1 && int(rf) > live {
		rf = int16(live)
	}
	return coordinator.TopicShape{Partitions: c.cfg.Partitions, ReplicationFactor: rf, Configs: maps.Clone(offsetsTopicConfigs)}
}

// EnsureOffsetsTopic creates __consumer_offsets with OffsetsTopicShape
// unless it exists (its shape is then the Cluster's to check), and returns
// once this node's replicas reflect it. It returns the partition count the
// coordinator maps groups with. FindCoordinator calls it on a group's
// first use, and AddOffsetsToTxn (package txn) on a transaction's first
// offsets, which may come before any group was used.
func (c *Coordinator) EnsureOffsetsTopic(ctx context.Context) (int32, error) {
	s := c.OffsetsTopicShape()
	if err := c.cluster.EnsureTopic(ctx, OffsetsTopic, s.Partitions, s.ReplicationFactor, s.Configs); err != nil {
		return 0, err
	}
	return s.Partitions, nil
}
