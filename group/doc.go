// Package group is the consumer group coordinator: the classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed offsets
// (OffsetCommit, OffsetFetch, OffsetDelete), the group admin APIs
// (ListGroups, DescribeGroups, DeleteGroups) and FindCoordinator.
//
// The coordinator of a group is the leader of the __consumer_offsets
// partition PartitionFor(group, partitions). Committed offsets and group
// metadata are records in that partition, in Kafka's own key and value
// schemas (see records.go), appended by the coordinator and acknowledged
// once the high watermark passes them; a commit is applied to the group's
// state (what OffsetFetch answers) only then. A node that leads an offsets
// partition it has not loaded yet reads it from the log start to the log
// end, as Kafka does (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile),
// and rebuilds its groups. docs/consumer-groups.md says what holds under
// each failure.
//
// Each group's state is owned by one goroutine (runner.go); the protocol
// handlers send it closures and wait for the answer in kafka.Reply.Wait,
// so a JoinGroup held for a rebalance never blocks its connection's
// handler. The state machine itself (state.go and the per-API methods on
// *group) reads no clock and does no I/O: the runner passes the time in and
// the persist hook appends records.
//
// It sits above partition (the offsets partitions' replicas) and kafka
// (the registry its handlers register in); package broker wires it.
package group
