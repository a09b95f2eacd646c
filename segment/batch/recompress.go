package batch

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Recompress appends to dst a copy of the whole batch b with its records
// recompressed under codec to, keeping every header field (offsets, leader
// epoch, timestamps, producer fields, the other attribute bits) and the
// records byte for byte; only the codec bits, the length and the CRC change.
// The broker uses it when a topic's compression.type differs from the
// producer's. b must be one whole batch with a valid CRC (ErrCRC) whose
// records decode to its count (see Records); decompression is bounded by
// maxDecompressed (ErrTooLarge). The caller owns the result.
func Recompress(dst, b []byte, to Codec, maxDecompressed int) ([]byte, error) {
	if to < CodecNone || to > CodecZstd {
		return dst, fmt.Errorf("%w: unknown codec %d", ErrCodec, int8(to))
	}
	if err := VerifyCRC(b); err != nil {
		return dst, err
	}
	sp := scratchPool.Get().(*[]byte)
	defer putScratch(sp)
	h, payload, err := openPayload(b, *sp, maxDecompressed)
	if err != nil {
		return dst, err
	}
	if h.Codec() != CodecNone {
		*sp = payload[:0]
	}
	if err := walkRecords(&h, payload, func(*Record) error { return nil }); err != nil {
		return dst, err
	}

	start := len(dst)
	dst = append(dst, b[:HeaderSize]...)
	if dst, err = Compress(to, dst, payload); err != nil {
		return dst[:start], err
	}
	if len(dst)-start-LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(dst)-start)
	}
	out := dst[start:]
	be := binary.BigEndian
	attrs := be.Uint16(out[offAttributes:])&^attrCodecMask | uint16(to)
	be.PutUint16(out[offAttributes:], attrs)
	be.PutUint32(out[offLength:], uint32(len(out)-LogOverhead))
	be.PutUint32(out[offCRC:], ComputeCRC(out))
	return dst, nil
}
