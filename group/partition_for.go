package group

import "github.com/shale-io/shale/coordinator"

// OffsetsTopic is the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = coordinator.OffsetsTopic

// PartitionFor is the __consumer_offsets partition that holds group, as
// Kafka computes it: Utils.abs(group.hashCode()) % partitions. partitions
// must be positive.
func PartitionFor(group string, partitions int32) int32 {
	return coordinator.PartitionFor(group, partitions)
}
