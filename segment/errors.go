package segment

import "errors"

// Typed errors. Callers match them with errors.Is; the protocol edge maps them
// to Kafka error codes.
var (
	// ErrOffsetOutOfRange: the offset is below the log start offset or above
	// the log end offset (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("segment: offset out of range")
	// ErrNonContiguous: a follower append whose first base offset is not the
	// log end offset, or whose batches do not follow one another.
	ErrNonContiguous = errors.New("segment: batch offsets not contiguous with the log")
	// ErrClosed: the Log has been closed.
	ErrClosed = errors.New("segment: log closed")
	// ErrCorruption: bytes on disk are not what the log wrote.
	ErrCorruption = errors.New("segment: corrupt log data")
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("segment: invalid config")
	// ErrTooLarge: a single batch is larger than segment.bytes, so it
	// cannot fit in one segment (Kafka's RecordBatchTooLargeException).
	ErrTooLarge = errors.New("segment: batch too large for a segment")
	// ErrSyncFailed: an fsync of the log failed (a flush, or the background
	// fsync of a rolled segment). It is sticky: Flush, Close, every later
	// roll and every later append return it, and the recovery point stays
	// below the unsynced data until the log is reopened.
	ErrSyncFailed = errors.New("segment: background fsync failed")
)
