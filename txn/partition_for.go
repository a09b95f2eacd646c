package txn

import "github.com/shale-io/shale/coordinator"

// StateTopic is the internal topic holding transaction state.
const StateTopic = coordinator.TransactionStateTopic

// PartitionFor is the __transaction_state partition of a transactional id,
// as Kafka computes it: Utils.abs(id.hashCode()) % partitions.
func PartitionFor(transactionalID string, partitions int32) int32 {
	return coordinator.PartitionFor(transactionalID, partitions)
}
