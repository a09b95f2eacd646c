package batch

import "fmt"

// Validate checks that b is exactly one well-formed batch as a producer
// must send it, and returns its header. It is the produce hot path: it
// reads the header and the CRC only and never decompresses. In order:
// ParseHeader's checks, the batch size equals len(b) (ErrCorrupt), the size
// is at most maxBatchBytes (ErrTooLarge), the CRC32C (ErrCRC), at least one
// record and NumRecords == LastOffsetDelta+1 (ErrRecordCount), and a known
// codec (ErrCodec). Records' own structure is checked by Records or
// ForEachRecord, when the broker decodes them.
func Validate(b []byte, maxBatchBytes int) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: batch length says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	if h.Size() > maxBatchBytes {
		return h, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, h.Size(), maxBatchBytes)
	}
	if err := VerifyCRC(b); err != nil {
		return h, err
	}
	if h.NumRecords <= 0 || int64(h.NumRecords) != int64(h.LastOffsetDelta)+1 {
		return h, fmt.Errorf("%w: %d records, last offset delta %d", ErrRecordCount, h.NumRecords, h.LastOffsetDelta)
	}
	if c := h.Codec(); c > CodecZstd {
		return h, fmt.Errorf("%w: unknown codec %d", ErrCodec, int8(c))
	}
	return h, nil
}
