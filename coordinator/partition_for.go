package coordinator

import "unicode/utf16"

// The internal topics of the coordinators on this runtime.
const (
	// OffsetsTopic holds committed offsets and group metadata (the group
	// coordinator's).
	OffsetsTopic = "__consumer_offsets"
	// TransactionStateTopic holds transaction state (the transaction
	// coordinator's).
	TransactionStateTopic = "__transaction_state"
	// ShareGroupStateTopic holds share-partition state (the share
	// coordinator's, package share).
	ShareGroupStateTopic = "__share_group_state"
)

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... over
// the UTF-16 code units, with int32 overflow.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaAbs is Kafka's Utils.abs: Math.abs, except that Integer.MIN_VALUE
// (whose absolute value does not fit) maps to 0.
func javaAbs(n int32) int32 {
	switch {
	case n == -1<<31:
		return 0
	case n < 0:
		return -n
	}
	return n
}

// PartitionFor is the internal-topic partition that holds key (a group
// id, a transactional id), as Kafka computes it for every coordinator:
// Utils.abs(key.hashCode()) % partitions. partitions must be positive.
func PartitionFor(key string, partitions int32) int32 {
	return javaAbs(javaStringHashCode(key)) % partitions
}
