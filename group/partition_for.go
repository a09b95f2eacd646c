package group

import "unicode/utf16"

// OffsetsTopic is the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

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

// PartitionFor is the __consumer_offsets partition that holds group, as
// Kafka computes it: Utils.abs(group.hashCode()) % partitions. partitions
// must be positive.
func PartitionFor(group string, partitions int32) int32 {
	return javaAbs(javaStringHashCode(group)) % partitions
}
