package segment

import (
	"encoding/binary"
	"fmt"

	"github.com/shale-io/shale/segment/batch"
	"github.com/twmb/franz-go/pkg/kgo"
)

var kgoDecompressor = kgo.DefaultDecompressor()

// defaultDecompress is Config.Decompress by default: franz-go's codecs.
func defaultDecompress(codec int8, data []byte) ([]byte, error) {
	return kgoDecompressor.Decompress(data, kgo.CompressionCodecType(codec))
}

// firstRecordAtOrAfter walks the records of one whole batch b and returns the
// offset and timestamp of the first record with offset >= minOffset and
// timestamp >= target (Kafka's searchForTimestamp inside a batch). With
// LogAppendTime every record has the batch's max timestamp.
func firstRecordAtOrAfter(b []byte, h *batch.Header, target, minOffset int64,
	decompress func(int8, []byte) ([]byte, error)) (offset, ts int64, ok bool, err error) {
	if h.LogAppendTime() {
		if h.MaxTimestamp >= target {
			return max(h.BaseOffset, minOffset), h.MaxTimestamp, h.LastOffset() >= minOffset, nil
		}
		return 0, 0, false, nil
	}
	recs := b[batch.HeaderSize:]
	if c := h.Codec(); c != batch.CodecNone {
		if decompress == nil {
			return 0, 0, false, fmt.Errorf("%w: no decompressor for codec %v", batch.ErrCodec, c)
		}
		if recs, err = decompress(int8(c), recs); err != nil {
			return 0, 0, false, fmt.Errorf("%w: %w", batch.ErrCodec, err)
		}
	}
	for i := int32(0); i < h.NumRecords && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || int64(len(recs)-n) < length {
			return 0, 0, false, fmt.Errorf("%w: record %d length", batch.ErrInvalidRecord, i)
		}
		rec := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(rec) < 1 {
			return 0, 0, false, fmt.Errorf("%w: record %d empty", batch.ErrInvalidRecord, i)
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			return 0, 0, false, fmt.Errorf("%w: record %d timestamp", batch.ErrInvalidRecord, i)
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			return 0, 0, false, fmt.Errorf("%w: record %d offset delta", batch.ErrInvalidRecord, i)
		}
		off, t := h.BaseOffset+offDelta, h.FirstTimestamp+tsDelta
		if off >= minOffset && t >= target {
			return off, t, true, nil
		}
	}
	return 0, 0, false, nil
}
