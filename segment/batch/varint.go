package batch

import (
	"encoding/binary"
	"math"
)

// Kafka record fields are zigzag varints: at most 5 bytes for an int32 and
// 10 for an int64. The readers below return n <= 0 on a truncated, overlong
// or out-of-range value, never panicking.

// readVarint32 decodes a zigzag varint that must fit an int32.
func readVarint32(b []byte) (int32, int) {
	if len(b) > binary.MaxVarintLen32 {
		b = b[:binary.MaxVarintLen32]
	}
	v, n := binary.Varint(b)
	if n <= 0 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, -1
	}
	return int32(v), n
}

// readVarint64 decodes a zigzag varint that must fit an int64.
func readVarint64(b []byte) (int64, int) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, -1
	}
	return v, n
}

// readBytes decodes a varint length and that many bytes; length -1 is null
// (nil). The returned slice aliases b. ok is false on any malformation.
func readBytes(b []byte) (v []byte, n int, ok bool) {
	l, n := readVarint32(b)
	if n <= 0 || l < -1 {
		return nil, 0, false
	}
	if l == -1 {
		return nil, n, true
	}
	if int(l) > len(b)-n {
		return nil, 0, false
	}
	return b[n : n+int(l) : n+int(l)], n + int(l), true
}

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// appendBytes appends a varint length and v; nil is written as length -1.
func appendBytes(b, v []byte) []byte {
	if v == nil {
		return appendVarint(b, -1)
	}
	b = appendVarint(b, int64(len(v)))
	return append(b, v...)
}

// varintLen is the encoded size of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
