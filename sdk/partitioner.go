package sdk

import "github.com/twmb/franz-go/pkg/kgo"

// KeyPartition returns the partition, out of n, that the Java client's
// default partitioner picks for key: toPositive(murmur2(key)) % n. The SDK's
// producer places keyed records the same way, so a key lands in the same
// partition whichever of the two wrote it. n must be positive.
func KeyPartition(key []byte, n int) int {
	return kafkaHasher(key, n)
}

// kafkaHasher is franz-go's murmur2 hasher with Kafka's masking: passing nil
// to StickyKeyPartitioner selects it.
var kafkaHasher = kgo.KafkaHasher(murmur2)

// murmur2 is Kafka's Utils.murmur2 (seed 0x9747b28c), as the Java client
// hashes keys.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		b = b[4:]
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// partitioner is the producer's: keyed records by KeyPartition, unkeyed ones
// sticky per batch (as the Java client since KIP-794 does, without its
// adaptive load balancing).
func partitioner() kgo.Partitioner {
	return kgo.StickyKeyPartitioner(kafkaHasher)
}
