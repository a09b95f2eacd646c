package batch

import (
	"encoding/binary"
	"fmt"
)

// Control records (KIP-98): a control batch (attributes control and
// transactional) holds one record whose key is version int16 (0) and type
// int16, and, for the transaction markers, whose value is Kafka's
// EndTransactionMarker: version int16 (0) and coordinator epoch int32.
// Both are big endian, as Kafka's ControlRecordType and
// EndTransactionMarker write them.

// ControlType is a control record's type.
type ControlType int16

// The control record types Kafka defines.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("control(%d)", int16(t))
}

// EndTxnMarker is a transaction marker's control record.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// Type is the marker's control type.
func (m EndTxnMarker) Type() ControlType {
	if m.Commit {
		return ControlCommit
	}
	return ControlAbort
}

// ControlKey is a control record key of type t, version 0.
func ControlKey(t ControlType) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b[2:], uint16(t))
	return b
}

// Value is the marker's EndTransactionMarker record value, version 0.
func (m EndTxnMarker) Value() []byte {
	b := make([]byte, 6)
	binary.BigEndian.PutUint32(b[2:], uint32(m.CoordinatorEpoch))
	return b
}

// ParseControlKey decodes a control record key: version (Kafka reads
// newer versions too, ignoring what follows the type) and type.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < 4 {
		return 0, fmt.Errorf("%w: control record key of %d bytes", ErrInvalidRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return 0, fmt.Errorf("%w: control record key version %d", ErrInvalidRecord, v)
	}
	return ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// ParseEndTxnValue decodes an EndTransactionMarker value (version 0 and
// later, as Kafka reads them).
func ParseEndTxnValue(value []byte) (coordinatorEpoch int32, err error) {
	if len(value) < 6 {
		return 0, fmt.Errorf("%w: end transaction marker value of %d bytes", ErrInvalidRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 {
		return 0, fmt.Errorf("%w: end transaction marker version %d", ErrInvalidRecord, v)
	}
	return int32(binary.BigEndian.Uint32(value[2:])), nil
}

// BuildEndTxnMarker appends a control batch holding m for the producer
// (id, epoch) to dst: attributes control and transactional, base sequence
// -1, one record, timestamp ts (CreateTime). Offsets and the leader epoch
// are the log's to stamp.
func BuildEndTxnMarker(dst []byte, producerID int64, producerEpoch int16, ts int64, m EndTxnMarker) ([]byte, error) {
	opts := BuildOptions{
		LeaderEpoch: -1, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: producerID, ProducerEpoch: producerEpoch, BaseSequence: -1,
		Transactional: true, Control: true,
	}
	return Build(dst, opts, []Record{{Key: ControlKey(m.Type()), Value: m.Value()}})
}

// ParseEndTxnMarker reads the transaction marker of the whole control
// batch b (exactly one batch, as Split gives): ok is false for a control
// batch of another type. A batch that is not a control batch, or whose
// record is malformed, is ErrInvalidRecord.
func ParseEndTxnMarker(b []byte) (m EndTxnMarker, ok bool, err error) {
	h, err := ParseHeader(b)
	if err != nil {
		return m, false, err
	}
	if !h.Control() {
		return m, false, fmt.Errorf("%w: not a control batch", ErrInvalidRecord)
	}
	// A control batch is never compressed by Kafka, but read it as any batch.
	recs, err := Records(b, 1<<16)
	if err != nil {
		return m, false, err
	}
	if len(recs) != 1 {
		return m, false, fmt.Errorf("%w: control batch with %d records", ErrInvalidRecord, len(recs))
	}
	t, err := ParseControlKey(recs[0].Key)
	if err != nil {
		return m, false, err
	}
	if t != ControlAbort && t != ControlCommit {
		return m, false, nil
	}
	ce, err := ParseEndTxnValue(recs[0].Value)
	if err != nil {
		return m, false, err
	}
	return EndTxnMarker{Commit: t == ControlCommit, CoordinatorEpoch: ce}, true, nil
}
