package sdk

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is a Kafka record, franz-go's. Topic, Key, Value, Headers and
// Timestamp are the caller's; Partition and Offset are set by the producer
// on success and by the consumer on receipt.
type Record = kgo.Record

// Header is one record header.
type Header = kgo.RecordHeader

type positionKind uint8

const (
	posStart positionKind = iota
	posEnd
	posOffset
	posTime
)

// Position names a place in a partition: the log start, the end, an
// offset, or the first record at or after a time. The zero Position is
// the log start.
type Position struct {
	kind   positionKind
	offset int64
	at     time.Time
}

// Start is the first offset still retained, remote or local.
func Start() Position { return Position{kind: posStart} }

// End is the high watermark: the offset the next record will take.
func End() Position { return Position{kind: posEnd} }

// AtOffset is offset o; o below the log start means the log start, above
// the end means the end.
func AtOffset(o int64) Position { return Position{kind: posOffset, offset: o} }

// AtTime is the first record whose timestamp is at or after t (Kafka's
// ListOffsets by time); the end when there is none.
func AtTime(t time.Time) Position { return Position{kind: posTime, at: t} }

// String describes the position.
func (p Position) String() string {
	switch p.kind {
	case posEnd:
		return "end"
	case posOffset:
		return fmt.Sprintf("offset %d", p.offset)
	case posTime:
		return "time " + p.at.UTC().Format(time.RFC3339Nano)
	default:
		return "start"
	}
}

// kgoOffset is p as a kgo consume offset.
func (p Position) kgoOffset() kgo.Offset {
	switch p.kind {
	case posEnd:
		return kgo.NewOffset().AtEnd()
	case posOffset:
		return kgo.NewOffset().At(p.offset)
	case posTime:
		return kgo.NewOffset().AfterMilli(p.at.UnixMilli())
	default:
		return kgo.NewOffset().AtStart()
	}
}
