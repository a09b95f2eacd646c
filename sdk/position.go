package sdk

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is a Kafka record, franz-go's. Topic, Key, Value, Headers and
// Timestamp are the caller's; Partition and Offset are set by the producer
// on success and by the consumer on receipt.
type Record = kgo.Record

// Header is one record header.
type Header = kgo.RecordHeader

// PositionKind says how a Position picks an offset in a partition.
type PositionKind uint8

// The kinds of Position.
const (
	PositionStart   PositionKind = iota // the log start
	PositionEnd                         // the high watermark
	PositionOffset                      // an offset
	PositionTime                        // the first record at or after a time
	PositionFromEnd                     // n offsets before the end
)

// Position names a place in a partition: the log start, the end, an
// offset, n before the end, or the first record at or after a time. The
// zero Position is the log start.
type Position struct {
	kind   PositionKind
	offset int64 // PositionOffset: the offset; PositionFromEnd: n
	at     time.Time
}

// Start is the first offset still retained, remote or local.
func Start() Position { return Position{kind: PositionStart} }

// End is the high watermark: the offset the next record will take.
func End() Position { return Position{kind: PositionEnd} }

// AtOffset is offset o; o below the log start means the log start, above
// the end means the end.
func AtOffset(o int64) Position { return Position{kind: PositionOffset, offset: o} }

// AtTime is the first record whose timestamp is at or after t (Kafka's
// ListOffsets by time); the end when there is none.
func AtTime(t time.Time) Position { return Position{kind: PositionTime, at: t} }

// FromEnd is n offsets before the end (the last n records of a partition
// without gaps), never before the log start. FromEnd(0) is End.
func FromEnd(n int64) Position {
	if n < 0 {
		n = -n
	}
	return Position{kind: PositionFromEnd, offset: n}
}

// Kind is how p picks its offset.
func (p Position) Kind() PositionKind { return p.kind }

// Offset is the offset of an AtOffset position, or n of FromEnd(n); 0 for
// the other kinds.
func (p Position) Offset() int64 { return p.offset }

// Time is the time of an AtTime position; the zero time for the others.
func (p Position) Time() time.Time { return p.at }

// ParsePosition reads a position as Kafka's and Shale's tools write it:
//
//	start | beginning | earliest | oldest   Start
//	end | latest | newest                   End
//	N                                       AtOffset(N)
//	-N                                      FromEnd(N)
//	@TIME                                   AtTime: TIME in ms since the epoch or RFC 3339
//
// Anything else is ErrInvalidPosition.
func ParsePosition(s string) (Position, error) {
	switch strings.ToLower(s) {
	case "start", "beginning", "earliest", "oldest":
		return Start(), nil
	case "end", "latest", "newest":
		return End(), nil
	}
	if ts, ok := strings.CutPrefix(s, "@"); ok {
		if ms, err := strconv.ParseInt(ts, 10, 64); err == nil {
			return AtTime(time.UnixMilli(ms)), nil
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return Position{}, fmt.Errorf("%w: time %q: want ms since the epoch or RFC 3339", ErrInvalidPosition, ts)
		}
		return AtTime(t), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("%w: %q: want start, end, N, -N or @TIME", ErrInvalidPosition, s)
	}
	if strings.HasPrefix(s, "-") {
		return FromEnd(-n), nil
	}
	return AtOffset(n), nil
}

// String describes the position.
func (p Position) String() string {
	switch p.kind {
	case PositionEnd:
		return "end"
	case PositionOffset:
		return fmt.Sprintf("offset %d", p.offset)
	case PositionFromEnd:
		return fmt.Sprintf("%d before the end", p.offset)
	case PositionTime:
		return "time " + p.at.UTC().Format(time.RFC3339Nano)
	default:
		return "start"
	}
}

// KgoOffset is p as a franz-go consume offset (for kgo.ConsumeResetOffset
// or kgo.ConsumePartitions).
func (p Position) KgoOffset() kgo.Offset {
	switch p.kind {
	case PositionEnd:
		return kgo.NewOffset().AtEnd()
	case PositionOffset:
		return kgo.NewOffset().At(p.offset)
	case PositionFromEnd:
		return kgo.NewOffset().AtEnd().Relative(-p.offset)
	case PositionTime:
		return kgo.NewOffset().AfterMilli(p.at.UnixMilli())
	default:
		return kgo.NewOffset().AtStart()
	}
}
