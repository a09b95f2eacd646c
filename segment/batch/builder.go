package batch

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// BuildOptions are the header fields of a batch that Build writes.
type BuildOptions struct {
	BaseOffset     int64
	LeaderEpoch    int32
	Codec          Codec
	LogAppendTime  bool
	FirstTimestamp int64
	// MaxTimestamp is written as is when non-zero; zero means computed as
	// FirstTimestamp plus the largest record timestamp delta.
	MaxTimestamp  int64
	ProducerID    int64 // -1 for a producer without idempotence
	ProducerEpoch int16 // -1 without idempotence
	BaseSequence  int32 // -1 without idempotence
	Transactional bool
	Control       bool
	// KeepOffsetDeltas writes each record's OffsetDelta as given (they must
	// increase strictly from zero or more, as after compaction). By default
	// record i gets offset delta i and the records' OffsetDelta is ignored.
	KeepOffsetDeltas bool
}

// NoProducer returns options for a plain (non-idempotent) producer's batch:
// producer id, epoch and base sequence -1, as clients send them.
func NoProducer() BuildOptions {
	return BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LeaderEpoch: -1}
}

// Build appends one RecordBatch v2 holding records to dst, compressed with
// opts.Codec, with a correct length and CRC32C, and returns the extended
// slice. It needs at least one record (ErrRecordCount) and offset deltas
// that increase (ErrInvalidRecord, with KeepOffsetDeltas). The caller owns
// the result; records are not retained. Build is safe for concurrent use.
func Build(dst []byte, opts BuildOptions, records []Record) ([]byte, error) {
	if len(records) == 0 {
		return dst, fmt.Errorf("%w: a batch needs at least one record", ErrRecordCount)
	}
	lastDelta := int32(len(records) - 1)
	maxTSDelta := int64(math.MinInt64)
	for i := range records {
		r := &records[i]
		if opts.KeepOffsetDeltas {
			if r.OffsetDelta < 0 || (i > 0 && r.OffsetDelta <= records[i-1].OffsetDelta) {
				return dst, fmt.Errorf("%w: record %d offset delta %d does not increase", ErrInvalidRecord, i, r.OffsetDelta)
			}
			lastDelta = r.OffsetDelta
		}
		maxTSDelta = max(maxTSDelta, r.TimestampDelta)
	}
	if opts.Codec < CodecNone || opts.Codec > CodecZstd {
		return dst, fmt.Errorf("%w: unknown codec %d", ErrCodec, int8(opts.Codec))
	}
	maxTS := opts.MaxTimestamp
	if maxTS == 0 {
		maxTS = opts.FirstTimestamp + maxTSDelta
	}

	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	if opts.Codec == CodecNone {
		dst = appendRecords(dst, records, opts.KeepOffsetDeltas)
	} else {
		sp := scratchPool.Get().(*[]byte)
		raw := appendRecords((*sp)[:0], records, opts.KeepOffsetDeltas)
		var err error
		dst, err = Compress(opts.Codec, dst, raw)
		*sp = raw
		putScratch(sp)
		if err != nil {
			return dst[:start], err
		}
	}
	if len(dst)-start-LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(dst)-start)
	}

	attrs := uint16(opts.Codec)
	if opts.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	if opts.Transactional {
		attrs |= attrTransactional
	}
	if opts.Control {
		attrs |= attrControl
	}
	b := dst[start:]
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(opts.BaseOffset))
	be.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.LeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(b[offFirstTimestamp:], uint64(opts.FirstTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(b[offProducerID:], uint64(opts.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(opts.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(opts.BaseSequence))
	be.PutUint32(b[offNumRecords:], uint32(len(records)))
	be.PutUint32(b[offCRC:], ComputeCRC(b))
	return dst, nil
}

// scratchPool holds buffers for uncompressed records awaiting compression.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// putScratch returns a scratch buffer to the pool unless it grew past 1 MiB,
// so that one huge batch does not pin its buffer for good.
func putScratch(sp *[]byte) {
	if cap(*sp) <= 1<<20 {
		scratchPool.Put(sp)
	}
}

// appendRecords appends the encoded records.
func appendRecords(b []byte, records []Record, keepDeltas bool) []byte {
	for i := range records {
		r := &records[i]
		delta := int64(i)
		if keepDeltas {
			delta = int64(r.OffsetDelta)
		}
		size := 1 + varintLen(r.TimestampDelta) + varintLen(delta) +
			bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
		for _, hd := range r.Headers {
			size += varintLen(int64(len(hd.Key))) + len(hd.Key) + bytesLen(hd.Value)
		}
		b = appendVarint(b, int64(size))
		b = append(b, byte(r.Attributes))
		b = appendVarint(b, r.TimestampDelta)
		b = appendVarint(b, delta)
		b = appendBytes(b, r.Key)
		b = appendBytes(b, r.Value)
		b = appendVarint(b, int64(len(r.Headers)))
		for _, hd := range r.Headers {
			b = appendVarint(b, int64(len(hd.Key)))
			b = append(b, hd.Key...)
			b = appendBytes(b, hd.Value)
		}
	}
	return b
}

func bytesLen(v []byte) int {
	if v == nil {
		return 1
	}
	return varintLen(int64(len(v))) + len(v)
}
