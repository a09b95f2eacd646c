package partition

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
)

// ErrDiskFull: the data directory's filesystem is past the broker's
// disk_high_watermark; produce is refused until tiering and retention free
// space (KAFKA_STORAGE_ERROR, which clients retry).
var ErrDiskFull = errors.New("partition: data disk above its high-water mark")

// RemoteState is what the tiering manager tells a replica about its remote
// (tiered) segments.
type RemoteState struct {
	// LogStart is the lowest offset held in remote segments, or -1 when
	// there are none.
	LogStart int64
	// CopiedNext: every local segment whose next offset is <= CopiedNext is
	// committed remotely (CopyFinished). Local retention never deletes
	// past it.
	CopiedNext int64
}

// SetRemoteState records the partition's remote state (the tiering manager
// calls it after each pass). Safe for concurrent use.
func (r *Replica) SetRemoteState(s RemoteState) {
	r.remote.Lock()
	if !r.remote.known || r.remote.state != s {
		r.remote.gen.Add(1)
		remoteChanges.Add(1)
	}
	r.remote.state = s
	r.remote.known = true
	r.remote.Unlock()
	r.notifyWatchers() // the log start fetches answer may have moved
}

// RemoteState returns the last state set, and false when none was set.
func (r *Replica) RemoteState() (RemoteState, bool) {
	r.remote.Lock()
	defer r.remote.Unlock()
	return r.remote.state, r.remote.known
}

// LogStartOffset is the partition's log start: the first offset retained
// anywhere, remote or local.
func (r *Replica) LogStartOffset() int64 {
	local := r.log.LogStartOffset()
	if s, ok := r.RemoteState(); ok && s.LogStart >= 0 && s.LogStart < local {
		return s.LogStart
	}
	return local
}

// FetchPos is what this replica's next follower Fetch asks: its log end,
// its log start (LogStartOffset) and the newest epoch of its log, with the
// generations they were read at (FetchPositionSince).
type FetchPos struct {
	FetchOffset, LogStart int64
	LastFetchedEpoch      int32

	valid             bool
	logGen, remoteGen uint64
}

// remoteChanges counts the remote state changes of every replica of the
// process (each replica's remote generation).
var remoteChanges atomic.Uint64

// PositionChanges returns a count that changes whenever the fetch position
// (FetchPositionSince) of any replica of the process may have changed: its
// log's state or its remote state. While it stays the same, every
// FetchPos read before it is current.
func PositionChanges() uint64 { return segment.StateChanges() + remoteChanges.Load() }

// FetchPositionSince returns prev while neither the log's state nor the
// remote state changed since prev was read (two atomic loads, no lock: a
// follower's round over thousands of idle partitions), else reads the
// position again. The zero FetchPos always reads.
func (r *Replica) FetchPositionSince(prev FetchPos) FetchPos {
	if prev.valid && r.log.StateGen() == prev.logGen && r.remote.gen.Load() == prev.remoteGen {
		return prev
	}
	rg := r.remote.gen.Load() // before the state it covers
	leo, local, epoch, lg := r.log.PositionGen()
	logStart := local
	if s, ok := r.RemoteState(); ok && s.LogStart >= 0 && s.LogStart < local {
		logStart = s.LogStart
	}
	return FetchPos{FetchOffset: leo, LogStart: logStart, LastFetchedEpoch: epoch, valid: true, logGen: lg, remoteGen: rg}
}

// LocalLogStartOffset is the first offset still on local disk.
func (r *Replica) LocalLogStartOffset() int64 { return r.log.LogStartOffset() }

// SetDiskFull turns the disk high-water mark refusal of appends on or off.
func (r *Replica) SetDiskFull(full bool) { r.diskFull.Store(full) }

// SnapshotAtOrBelow returns the path and offset of the newest producer-state
// snapshot file at or below offset; ok is false when there is none. The file
// may be removed by a later roll: open it promptly and tolerate ENOENT.
func (r *Replica) SnapshotAtOrBelow(offset int64) (path string, at int64, ok bool) {
	offs := listSnapshots(r.fs, r.dir)
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] <= offset {
			return snapshotName(r.dir, offs[i]), offs[i], true
		}
	}
	return "", 0, false
}

// SegmentPath returns the path of a segment file of this replica: base is
// the segment's base offset, suffix ".log", ".index" or ".timeindex".
func (r *Replica) SegmentPath(base int64, suffix string) string {
	return filepath.Join(r.dir, segmentFileName(base, suffix))
}

func segmentFileName(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }

// TieredRetentionPlan decides, without touching the disk, the new local log
// start of a replica with remote storage on. Local retention
// (local.retention.ms by max timestamp, local.retention.bytes) deletes a run
// of closed segments from the oldest only as far as they are committed
// remotely (next offset <= copiedNext); total retention (retention.ms,
// retention.bytes) deletes past it too, as the data is due to go
// everywhere. It returns -1 when nothing is due; the active segment is
// never chosen.
func TieredRetentionPlan(segs []segment.SegmentInfo, now time.Time, localMs, localBytes, totalMs, totalBytes, copiedNext int64) int64 {
	byLocal := RetentionPlan(segs, now, localMs, localBytes)
	start := int64(-1)
	for _, s := range segs {
		if s.Active || s.NextOffset > byLocal || s.NextOffset > copiedNext {
			break
		}
		start = s.NextOffset
	}
	return max(start, RetentionPlan(segs, now, totalMs, totalBytes))
}

// applyTieredRetention is ApplyRetention for a replica with remote storage
// on. Until the tiering manager has reported (SetRemoteState), nothing
// counts as uploaded and only total retention deletes.
//
// Local deletion keeps the leader-epoch history below the local log start
// (segment.Log.DeleteLocalSegmentsBefore): the remote data has those
// epochs, and OffsetForLeaderEpoch must place them for a follower that
// returns with a divergent tail (Kafka keeps the history from the global
// log start). Once the remote state is known the history is cut at the
// partition's log start, LogStartOffset.
func (r *Replica) applyTieredRetention(now time.Time, tc *config.TopicConfig) error {
	s, known := r.RemoteState()
	if !known {
		s.CopiedNext = -1
	}
	start := int64(-1)
	if r.log.SegmentCount() > 1 {
		// The active segment is never deleted: a log of one segment
		// needs no plan (nor a copy of its segment list).
		start = TieredRetentionPlan(r.log.Segments(), now, tc.LocalRetentionMs(), tc.LocalRetentionBytes(),
			tc.Int64(config.RetentionMs), tc.Int64(config.RetentionBytes), s.CopiedNext)
	}
	if start > r.log.LogStartOffset() {
		n, err := r.log.DeleteLocalSegmentsBefore(start)
		r.notifyWatchers() // the local log start moved
		if err != nil {
			return err
		}
		if n > 0 {
			PruneSnapshots(r.fs, r.dir, r.log.LogStartOffset())
			r.logger.Info("local retention deleted segments", "segments", n, "local_log_start_offset", r.log.LogStartOffset())
		}
	}
	if !known {
		return nil
	}
	_, err := r.log.TruncateEpochsBefore(r.LogStartOffset())
	return err
}
