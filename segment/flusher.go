package segment

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The background flusher fsyncs rolled segments off the append path, as
// Kafka schedules flushUptoOffsetExclusive(newSegment.baseOffset) on a
// roll: rollLocked queues the old segment and returns, and the flusher fsyncs
// its .log and both indexes and only then raises the recovery point to the
// segment's end. The flusher is a goroutine started when work is queued (a
// rolled segment, a writeback request) and gone once the queue is empty, so
// a log with no traffic costs no goroutine (issue 23: 1,000 idle partitions
// held 1,000 flushers); Close stops it and waits for it.
//
// Safety against the writer: a queued segment is never closed, truncated or
// remapped while the flusher may touch it. Every writer path that does so
// first calls dropFlushes, which takes flusher.syncing — held by the flusher
// from taking a job until the recovery point is raised — and removes the
// job. So the flusher either finished a job before the writer changed the
// segment, or never starts it. The writer lock is never taken by the
// flusher, so an fsync never blocks Append; a writer that drops jobs
// (Truncate, retention, Flush, Close) waits for at most one segment's fsync.

// flushJob is a rolled segment waiting for its fsync; end is its next
// offset at the roll, where the recovery point goes once it is synced.
type flushJob struct {
	seg *segment
	end int64
}

// flusher is the Log's background flush state.
type flusher struct {
	// syncing is held by the flusher while it syncs one job and raises the
	// recovery point for it, and by dropFlushes. Lock order: writer, then
	// syncing, then mu or the Log's rp (leaves, never nested; see Log).
	syncing sync.Mutex

	mu      sync.Mutex
	pending []flushJob // oldest first
	err     error      // first failure; sticky (an fsync error may have lost pages)
	// failed is set (after err, under mu) once err is: Err's lock-free
	// answer for a healthy log, which every periodic pass asks.
	failed atomic.Bool

	// dirDirty: a roll created a segment file whose directory entry is not
	// fsynced yet. The recovery point may not pass that segment's base
	// until syncPendingDir has run.
	dirDirty atomic.Bool

	// wb is the writeback the writer asked for and the flusher has not
	// started yet (writeback.go); zero when none. Guarded by mu.
	wb writebackJob

	// epochsWait: the head job is synced and waits for the leader-epoch
	// checkpoint, which the writer's lock was too busy to let the flusher
	// write (flushNextRolled); runFlusher tries again after a backoff.
	// Guarded by mu.
	epochsWait bool

	// running: a flusher goroutine runs and will look at pending and wb
	// again before it returns. stopped: Close began; none is started any
	// more. Guarded by mu.
	running, stopped bool

	stop     chan struct{} // closed by stopFlusher
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// bgSyncHook, when set (tests only), runs in the flusher before it fsyncs
// the segment at base.
var bgSyncHook func(base int64)

// syncPendingDir fsyncs the log directory if a roll created a segment
// since the last time: the flusher before it raises the recovery point to
// a rolled segment's end (the next segment's base), and flushLocked. Rolls
// leave it here, off the append path: on ext4 a directory fsync waits for
// the journal commit that the flusher's own fsync of the old segment starts.
func (l *Log) syncPendingDir() error {
	if !l.bg.dirDirty.Swap(false) {
		return nil
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		l.bg.dirDirty.Store(true)
		return err
	}
	return nil
}

// startFlusher readies the background flusher, which starts no goroutine
// until work is queued. Open calls it last.
func (l *Log) startFlusher() {
	l.bg.stop = make(chan struct{})
}

// kickFlusherLocked starts the flusher goroutine for work just queued,
// unless one runs (it looks at the queue again before it returns) or the
// log is closing. REQUIRES: l.bg.mu held.
func (l *Log) kickFlusherLocked() {
	if l.bg.running || l.bg.stopped || l.bg.stop == nil {
		return
	}
	l.bg.running = true
	l.bg.wg.Add(1)
	go l.runFlusher()
}

// stopFlusher stops the flusher and waits for it (and any fsync it is in);
// queued jobs stay queued for flushLocked. Idempotent.
func (l *Log) stopFlusher() {
	l.bg.stopOnce.Do(func() {
		if l.bg.stop == nil {
			return
		}
		l.bg.mu.Lock()
		l.bg.stopped = true
		l.bg.mu.Unlock()
		close(l.bg.stop)
		l.bg.wg.Wait()
	})
}

// runFlusher syncs the queued segments and starts the requested writeback
// until there is nothing left to do (or a sync failed, which leaves the
// rest queued for good), then returns.
func (l *Log) runFlusher() {
	defer l.bg.wg.Done()
	backoff := time.Duration(0)
	for {
		for l.flushNextRolled() {
		}
		l.writebackNext()
		l.bg.mu.Lock()
		if l.bg.stopped || (len(l.bg.pending) == 0 || l.bg.err != nil) && l.bg.wb.seg == nil {
			l.bg.running = false
			l.bg.mu.Unlock()
			return
		}
		wait := l.bg.epochsWait
		l.bg.epochsWait = false
		l.bg.mu.Unlock()
		if !wait {
			backoff = 0
			continue
		}
		// The head job waits for the leader-epoch checkpoint, which needs
		// the writer lock (savedEpochsBelow): try again shortly, never
		// blocking on the writer, which may be waiting for this flusher.
		backoff = min(max(2*backoff, time.Millisecond), epochsRetryMax)
		t := time.NewTimer(backoff)
		select {
		case <-l.bg.stop:
			t.Stop()
		case <-t.C:
		}
	}
}

// epochsRetryMax bounds the flusher's backoff while its next job waits for
// the writer lock to write the leader-epoch checkpoint.
const epochsRetryMax = 100 * time.Millisecond

// queueFlush hands the rolled segment s, ending at end, to the flusher.
// REQUIRES: writer lock held.
func (l *Log) queueFlush(s *segment, end int64) {
	l.bg.mu.Lock()
	defer l.bg.mu.Unlock()
	l.bg.pending = append(l.bg.pending, flushJob{seg: s, end: end})
	l.kickFlusherLocked()
}

// flushNextRolled syncs the oldest queued segment and raises the recovery
// point to its end. It reports whether to go on: false when the queue is
// empty, the flusher is stopping, or a sync failed.
func (l *Log) flushNextRolled() bool {
	select {
	case <-l.bg.stop:
		return false
	default:
	}
	l.bg.syncing.Lock()
	defer l.bg.syncing.Unlock()
	l.bg.mu.Lock()
	if len(l.bg.pending) == 0 || l.bg.err != nil {
		l.bg.mu.Unlock()
		return false
	}
	job := l.bg.pending[0]
	l.bg.mu.Unlock()

	var err error
	if !job.seg.synced.Load() { // synced already when the job waits for the epochs
		if bgSyncHook != nil {
			bgSyncHook(job.seg.base)
		}
		err = job.seg.sync()
	}
	if err == nil {
		err = l.syncPendingDir()
	}
	epochsSaved := true
	if err == nil {
		job.seg.synced.Store(true)
		// Jobs run in roll order and each earlier one is synced (or its
		// segment left the log), so everything below job.end is durable.
		var end int64
		end, err = l.savedEpochsBelow(job.end)
		if err == nil {
			epochsSaved = end == job.end
			err = l.raiseRecoveryPoint(end)
		}
	}
	l.bg.mu.Lock()
	defer l.bg.mu.Unlock()
	if err == nil && !epochsSaved {
		// The writer was busy (a roll hands over its job while it still
		// holds the lock): the job stays queued, its segment synced, and
		// the flusher comes back for the checkpoint (runFlusher).
		l.bg.epochsWait = true
		return false
	}
	if err != nil {
		if l.bg.err == nil {
			failedLogs.Add(1)
		}
		l.bg.err = fmt.Errorf("%w: segment %s: %w", ErrSyncFailed, fileName(job.seg.base, logSuffix), err)
		l.bg.failed.Store(true)
		l.logger.Error("background flush of a rolled segment failed; the recovery point stays below it", "err", err,
			"file", fileName(job.seg.base, logSuffix))
		return false
	}
	// No writer dropped the job meanwhile: dropFlushes needs syncing.
	l.bg.pending = l.bg.pending[1:]
	return len(l.bg.pending) > 0
}

// dropFlushes waits for the flusher's current fsync, if any, and removes the
// queued jobs whose segment matches; the flusher never touches them again.
// A nil match drops every job. Callers then close, truncate, remap or sync
// those segments themselves.
// REQUIRES: writer lock held.
func (l *Log) dropFlushes(match func(*segment) bool) {
	l.bg.syncing.Lock()
	defer l.bg.syncing.Unlock()
	l.bg.mu.Lock()
	defer l.bg.mu.Unlock()
	l.bg.pending = slices.DeleteFunc(l.bg.pending, func(j flushJob) bool { return match == nil || match(j.seg) })
	if l.bg.wb.seg != nil && (match == nil || match(l.bg.wb.seg)) {
		l.bg.wb = writebackJob{}
	}
}

// failedLogs counts the logs of this process whose fsync failed (their
// Err set): while it is 0, AnyFailed lets a pass over thousands of logs
// skip asking each one.
var failedLogs atomic.Int64

// AnyFailed reports whether any log of this process has failed an fsync
// (its Err is set), ever: a caller that walks every log for Err can skip
// the walk while it is false.
func AnyFailed() bool { return failedLogs.Load() != 0 }

// flushErr is the flusher's sticky error, wrapping ErrSyncFailed, or nil.
func (l *Log) flushErr() error {
	if !l.bg.failed.Load() {
		return nil
	}
	l.bg.mu.Lock()
	defer l.bg.mu.Unlock()
	return l.bg.err
}

// savedEpochsBelow is how far the flusher may raise the recovery point
// towards end: to end once the leader-epoch checkpoint holds every entry
// starting below it, else to the first entry it lacks (recovery must
// re-read that entry's batches to assign it again). When the checkpoint
// lacks one, the flusher writes it if the writer lock is free at once; it
// never waits for the writer (a writer waits for the flusher in
// dropFlushes, and Close stops the flusher holding it): with the writer
// busy, the job stays queued and the flusher tries again (runFlusher).
func (l *Log) savedEpochsBelow(end int64) (int64, error) {
	from, ok := l.unsavedEpochFrom()
	if !ok || from >= end {
		return end, nil
	}
	if l.writer.TryLock() {
		var err error
		if !l.mu.closed {
			err = l.syncEpochs()
		}
		l.writer.Unlock()
		if err != nil {
			return 0, err
		}
	}
	if from, ok := l.unsavedEpochFrom(); ok {
		return min(end, from), nil
	}
	return end, nil
}

// raiseRecoveryPoint moves the recovery point up to v (the file first); a
// lower v leaves it.
func (l *Log) raiseRecoveryPoint(v int64) error {
	l.rp.Lock()
	defer l.rp.Unlock()
	if v <= l.rp.point {
		return nil
	}
	if err := writeOffsetFile(l.fs, l.dir, recoveryPointFile, v); err != nil {
		return err
	}
	l.rp.point = v
	return nil
}

// setRecoveryPoint stores v as the recovery point, in the file first.
// Writers that lower it or move it past queued segments drop their jobs
// first (dropFlushes), so the flusher cannot raise it past them afterwards.
// REQUIRES: writer lock held.
func (l *Log) setRecoveryPoint(v int64) error {
	l.rp.Lock()
	defer l.rp.Unlock()
	if err := writeOffsetFile(l.fs, l.dir, recoveryPointFile, v); err != nil {
		return err
	}
	l.rp.point = v
	return nil
}
