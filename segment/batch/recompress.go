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
	dst, _, err := recompress(dst, b, nil, to, maxDecompressed)
	return dst, err
}

// recompress is Recompress, which also returns the new batch's header;
// h is b's parsed header, or nil to parse it.
func recompress(dst, b []byte, h *Header, to Codec, maxDecompressed int) ([]byte, Header, error) {
	if to < CodecNone || to > CodecZstd {
		return dst, Header{}, fmt.Errorf("%w: unknown codec %d", ErrCodec, int8(to))
	}
	if err := VerifyCRC(b); err != nil {
		return dst, Header{}, err
	}
	sp := scratchPool.Get().(*[]byte)
	defer putScratch(sp)
	var (
		nh      Header
		payload []byte
		err     error
	)
	if h == nil {
		nh, payload, err = openPayload(b, *sp, maxDecompressed)
	} else {
		nh = *h
		payload, err = openParsedPayload(h, b, *sp, maxDecompressed)
	}
	if err != nil {
		return dst, Header{}, err
	}
	if nh.Codec() != CodecNone {
		*sp = payload[:0]
	}
	if err := walkRecords(&nh, payload, func(*Record) error { return nil }); err != nil {
		return dst, Header{}, err
	}

	start := len(dst)
	dst = append(dst, b[:HeaderSize]...)
	if dst, err = Compress(to, dst, payload); err != nil {
		return dst[:start], Header{}, err
	}
	if len(dst)-start-LogOverhead > math.MaxInt32 {
		return dst[:start], Header{}, fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(dst)-start)
	}
	out := dst[start:]
	be := binary.BigEndian
	nh.Attributes = int16(uint16(nh.Attributes)&^attrCodecMask | uint16(to))
	nh.Length = int32(len(out) - LogOverhead)
	be.PutUint16(out[offAttributes:], uint16(nh.Attributes))
	be.PutUint32(out[offLength:], uint32(nh.Length))
	nh.CRC = ComputeCRC(out)
	be.PutUint32(out[offCRC:], nh.CRC)
	return dst, nh, nil
}
