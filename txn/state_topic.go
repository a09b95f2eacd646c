package txn

import (
	"strconv"

	"github.com/shale-io/shale/coordinator"
)

// stateTopicConfigs are Kafka's configs of __transaction_state
// (TransactionStateManager.transactionTopicConfigs) for rf replicas and
// min.insync.replicas minISR (at most rf): compacted, uncompressed, no
// unclean leader election, 100 MiB segments.
func stateTopicConfigs(rf, minISR int16) map[string]string {
	return map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"segment.bytes":                  "104857600",
		"unclean.leader.election.enable": "false",
		"min.insync.replicas":            strconv.Itoa(int(min(rf, minISR))),
	}
}

// StateTopicShape is how __transaction_state must be made for this
// coordinator: transaction.state.log.num.partitions partitions (the count
// PartitionFor maps transactional ids with),
// transaction.state.log.replication.factor replicas capped at the brokers
// live now, and Kafka's configs of the topic with
// transaction.state.log.min.isr. Safe for concurrent use.
func (c *Coordinator) StateTopicShape() coordinator.TopicShape {
	rf := c.cfg.ReplicationFactor
	if live := c.cluster.LiveBrokers(); live >= 1 && int(rf) > live {
		rf = int16(live)
	}
	return coordinator.TopicShape{Partitions: c.cfg.Partitions, ReplicationFactor: rf, Configs: stateTopicConfigs(rf, c.cfg.MinISR)}
}
