// Package batch reads and writes Kafka RecordBatch v2 (magic 2): the unit that
// Shale receives on the wire, keeps on disk and copies to the bucket.
//
// The hot path touches only the fixed 61-byte header (ParseHeader, VerifyCRC,
// the Set* stampers); records are decoded only when a caller asks (Records).
// The append paths parse each header once and hand it down with its bytes
// as a Checked, whose stampers keep the two in step.
// Every function that reads outside bytes returns a typed error rather than
// panicking. The package imports no other Shale package.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Offsets of the header fields inside a RecordBatch v2.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// HeaderSize is the size of the fixed RecordBatch v2 header.
	HeaderSize = 61
	// LogOverhead is the part of the header not counted by the length field
	// (base offset and the length itself).
	LogOverhead = 12
	// Magic is the only record batch format Shale accepts.
	Magic = 2
)

// Typed errors. Callers match them with errors.Is; the protocol edge turns them
// into Kafka error codes (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD).
var (
	// ErrCorrupt: the bytes are not a well-formed batch (short, bad length).
	ErrCorrupt = errors.New("batch: corrupt record batch")
	// ErrCRC: the stored CRC32C does not match the batch contents.
	ErrCRC = errors.New("batch: crc mismatch")
	// ErrMagic: the batch is not magic 2.
	ErrMagic = errors.New("batch: unsupported magic")
	// ErrTooLarge: the batch exceeds the size the caller allows.
	ErrTooLarge = errors.New("batch: record batch too large")
	// ErrRecordCount: the record count disagrees with the records or offsets.
	ErrRecordCount = errors.New("batch: bad record count")
	// ErrInvalidRecord: a record inside the batch is malformed.
	ErrInvalidRecord = errors.New("batch: invalid record")
	// ErrCodec: the compression codec is unknown or its data is malformed.
	ErrCodec = errors.New("batch: bad compression")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Codec is the compression codec in attribute bits 0-2.
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// Header is the decoded fixed header of a RecordBatch v2.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the whole batch size in bytes, header included.
func (h *Header) Size() int { return LogOverhead + int(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the batch's compression codec.
func (h *Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// LogAppendTime reports whether timestamps are the broker's append time.
func (h *Header) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h *Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records.
func (h *Header) Control() bool { return h.Attributes&attrControl != 0 }

// Idempotent reports whether the batch carries a producer id.
func (h *Header) Idempotent() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, wrapping
// at MaxInt32 as Kafka does.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// ParseHeader decodes the fixed header at the start of b. It checks only what
// the header alone can tell: the size, the magic and that the length covers
// the header. It does not verify the CRC (see VerifyCRC) and does not require
// that b hold the whole batch.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("%w: %d bytes, need %d for a header", ErrCorrupt, len(b), HeaderSize)
	}
	be := binary.BigEndian
	h.BaseOffset = int64(be.Uint64(b[offBaseOffset:]))
	h.Length = int32(be.Uint32(b[offLength:]))
	h.PartitionLeaderEpoch = int32(be.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	h.CRC = be.Uint32(b[offCRC:])
	h.Attributes = int16(be.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(be.Uint32(b[offLastOffsetDelta:]))
	h.FirstTimestamp = int64(be.Uint64(b[offFirstTimestamp:]))
	h.MaxTimestamp = int64(be.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(be.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(be.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(be.Uint32(b[offBaseSequence:]))
	h.NumRecords = int32(be.Uint32(b[offNumRecords:]))
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d", ErrMagic, h.Magic)
	}
	if int(h.Length) < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: length %d shorter than the header", ErrCorrupt, h.Length)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("%w: last offset delta %d, %d records", ErrRecordCount, h.LastOffsetDelta, h.NumRecords)
	}
	return h, nil
}

// ComputeCRC returns the CRC32C of a whole batch, over the bytes from the
// attributes to the end, as Kafka defines it.
func ComputeCRC(b []byte) uint32 {
	return crc32.Checksum(b[offAttributes:], castagnoli)
}

// VerifyCRC checks the stored CRC32C of the whole batch b (exactly one batch).
func VerifyCRC(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	if got, want := ComputeCRC(b), binary.BigEndian.Uint32(b[offCRC:]); got != want {
		return fmt.Errorf("%w: stored %08x, computed %08x", ErrCRC, want, got)
	}
	return nil
}

// SetBaseOffset stamps the base offset. The CRC does not cover it.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch stamps the leader epoch. The CRC does not cover it.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime sets the LogAppendTime attribute and the max timestamp to ts
// and recomputes the CRC, as a broker does for topics with
// message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ts int64) {
	be := binary.BigEndian
	attrs := be.Uint16(b[offAttributes:]) | attrLogAppendTime
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint64(b[offMaxTimestamp:], uint64(ts))
	be.PutUint32(b[offCRC:], ComputeCRC(b))
}

// Split walks the concatenated batches in b and calls fn with each whole batch
// and its header. It stops at the first error from fn or from parsing; a
// partial batch at the end is ErrCorrupt (the caller decides whether that is a
// torn tail or bad input). Split does not verify CRCs.
func Split(b []byte, fn func(h *Header, batch []byte) error) error {
	for len(b) > 0 {
		h, err := ParseHeader(b)
		if err != nil {
			return err
		}
		n := h.Size()
		if n > len(b) {
			return fmt.Errorf("%w: batch of %d bytes, %d left", ErrCorrupt, n, len(b))
		}
		if err := fn(&h, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// SetLastOffsetDelta rewrites the last offset delta and recomputes the CRC.
// Log compaction uses it to keep a cleaned batch's original offset span when
// its last records were dropped, as Kafka's cleaner does.
func SetLastOffsetDelta(b []byte, delta int32) {
	be := binary.BigEndian
	be.PutUint32(b[offLastOffsetDelta:], uint32(delta))
	be.PutUint32(b[offCRC:], ComputeCRC(b))
}

// EmptyLike returns a batch with the header of b (offsets, offset span,
// epoch, timestamps, producer fields) and no records, uncompressed: what
// log compaction leaves of a batch whose records all went, so that the
// batch still accounts for its offsets and producer state.
func EmptyLike(b []byte) []byte {
	out := make([]byte, HeaderSize)
	copy(out, b[:HeaderSize])
	be := binary.BigEndian
	be.PutUint32(out[offLength:], uint32(HeaderSize-LogOverhead))
	attrs := be.Uint16(out[offAttributes:]) &^ attrCodecMask
	be.PutUint16(out[offAttributes:], attrs)
	be.PutUint32(out[offNumRecords:], 0)
	be.PutUint32(out[offCRC:], ComputeCRC(out))
	return out
}

// EmptyOutsideTxn is EmptyLike with the transactional attribute cleared:
// what log compaction leaves of a transactional batch whose records all
// went (an aborted transaction's, or a committed one's overwritten), so that
// a replay of producer state never opens a transaction for it once the
// transaction's marker may be removed.
func EmptyOutsideTxn(b []byte) []byte {
	out := EmptyLike(b)
	be := binary.BigEndian
	be.PutUint16(out[offAttributes:], be.Uint16(out[offAttributes:])&^attrTransactional)
	be.PutUint32(out[offCRC:], ComputeCRC(out))
	return out
}
