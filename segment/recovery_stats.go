package segment

import "sync/atomic"

// recoveryRead counts, for the whole process, the bytes of segment files
// that Open read to check or recover logs. It is
// process-wide because a node's partitions share one data directory and one
// figure: a node exposes it as shale_log_recovery_bytes_total.
var recoveryRead struct {
	bytes    atomic.Int64
	segments atomic.Int64
}

// RecoveryStats is what Open read to check or recover logs, summed over
// every Log opened in this process since it started.
type RecoveryStats struct {
	// Bytes of .log, .index and .timeindex files read while opening:
	// batches re-read (each with its header read once more before it),
	// index entries and batch headers checked. It grows with what the logs
	// hold past their recovery points, never with segment.index.bytes: a
	// recovered segment's preallocated index is neither read nor cleared.
	Bytes int64
	// Segments re-read batch by batch after an unclean stop or a failed
	// check.
	Segments int64
}

// Recovery returns the process's recovery totals. Safe for concurrent use.
func Recovery() RecoveryStats {
	return RecoveryStats{Bytes: recoveryRead.bytes.Load(), Segments: recoveryRead.segments.Load()}
}
