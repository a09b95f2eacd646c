// Package segment is the partition log on local disk: record batches laid out
// byte for byte as Apache Kafka lays them out, in segments named by their base
// offset (20 digits, zero padded) with a sparse offset index (.index), a
// sparse time index (.timeindex) and, for a segment holding ABORT markers,
// Kafka's transaction index (.txnindex, txn_index.go), plus the small
// per-partition files Kafka
// keeps beside them (leader-epoch-checkpoint) and a few of Shale's own
// (log-start-offset, recovery-point, .clean-shutdown).
//
// A Log is one partition's directory. It assigns offsets on leader appends,
// keeps them on follower appends, rolls segments, serves reads as file ranges
// (so the fetch path can sendfile them), answers timestamp and leader-epoch
// queries, truncates for followers, deletes whole segments for retention, and
// recovers after a crash by re-checking every batch past the recovery point.
//
// The package sits at the bottom of Shale's layers: it imports segment/batch
// and no other Shale package. It starts no goroutine of its own for time:
// time-based work (FlushMs, delayed file deletion) happens when the owner
// calls MaybeFlush; the one goroutine a Log starts, its background flusher,
// runs only while a rolled segment or a writeback waits for it.
package segment
