// Package share is the KIP-932 share group implementation: share groups
// (ShareGroupHeartbeat, ShareGroupDescribe), the share-partition state a
// partition leader keeps for each share group (ShareFetch,
// ShareAcknowledge), and its persistence as Kafka's ShareSnapshot and
// ShareUpdate records (records.go). Share group membership is written to
// __consumer_offsets through a MembershipLog (group_records.go,
// membership.go).
//
// The share-partition state machine (partition_state.go) reads no clock
// and does no I/O: the caller passes the time in milliseconds and the
// records it read from the log, and persists what Snapshot returns. Each
// state is owned by its caller's lock (see Manager).
//
// It sits beside group and fetch (it imports neither; it uses the
// coordinator runtime's errors): it reads the log
// through partition and an injected cold reader, and package broker wires
// it. docs/consumer-groups.md says what is built and what is not.
package share
