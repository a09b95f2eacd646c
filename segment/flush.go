package segment

import (
	"fmt"
	"sync/atomic"
)

// Flush fsyncs every segment up to the log end offset and records the
// recovery point (the recovery-point file), so that a crash afterwards
// re-checks only later data.
func (l *Log) Flush() error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	return l.flushLocked()
}

// MaybeFlush does the log's time-based work; the owner calls it
// periodically (the Log has no goroutine of its own). It flushes when
// FlushMs is set and the last flush is at least FlushMs old, and closes and
// removes segments whose file.delete.delay has passed.
func (l *Log) MaybeFlush() error {
	if l.flushIdle.Load() {
		return nil // the owner's pass visits every log each second
	}
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	now := l.cfg.Now()
	err := l.removeDueLocked(now)
	if l.cfg.FlushInterval > 0 && now.Sub(l.w.lastFlush) >= l.cfg.FlushInterval {
		if e := l.flushLocked(); err == nil {
			err = e
		}
	}
	l.setFlushIdleLocked(l.cfg.FlushInterval <= 0 && len(l.w.pendingDeletes) == 0)
	return err
}

// flushLocked fsyncs the segments not yet synced and writes the recovery
// point. Rolled segments still queued for the background flusher are taken
// back and synced here (after the flusher's current fsync, if any). An
// fsync failure, here or in the background, is sticky (Err): flushLocked
// returns it from then on and the log takes no more appends, since a
// retried fsync may succeed after the kernel dropped the unwritten pages
// (PostgreSQL's fsyncgate), and acknowledging more would promise what the
// disk may not hold.
// REQUIRES: writer lock held.
func (l *Log) flushLocked() error {
	l.dropFlushes(nil)
	if err := l.flushErr(); err != nil {
		return err
	}
	if err := l.syncEpochs(); err != nil {
		return l.failSync(epochCheckpointFile, err)
	}
	segs := l.mu.segments
	for _, s := range segs {
		if s.synced.Load() {
			continue
		}
		if err := s.sync(); err != nil {
			return l.failSync(fileName(s.base, logSuffix), err)
		}
		if s != segs[len(segs)-1] {
			s.synced.Store(true)
		}
	}
	if err := l.syncPendingDir(); err != nil {
		return l.failSync("directory", err)
	}
	l.w.unflushed = 0
	l.w.lastFlush = l.cfg.Now()
	if l.RecoveryPoint() == l.mu.leo {
		return nil
	}
	if err := l.setRecoveryPoint(l.mu.leo); err != nil {
		// Its fsyncs (the file's, the directory's) are the flush's
		// last: the directory's may be the only one left to fail when
		// the background flusher synced the rolled segments first.
		return l.failSync(recoveryPointFile, err)
	}
	return nil
}

// failSync records an fsync failure as the log's sticky error and returns
// it (wrapping ErrSyncFailed).
func (l *Log) failSync(what string, err error) error {
	l.bg.mu.Lock()
	defer l.bg.mu.Unlock()
	if l.bg.err == nil {
		l.bg.err = fmt.Errorf("%w: %s: %w", ErrSyncFailed, what, err)
		l.bg.failed.Store(true)
		failedLogs.Add(1)
		l.logger.Error("fsync failed; the log takes no more appends", "file", what, "err", err)
	}
	return l.bg.err
}

// Err is the log's sticky fsync error (wrapping ErrSyncFailed), or nil.
// Once set, appends fail with it until the log is reopened: the owner
// should take the log offline (stop leading it).
func (l *Log) Err() error { return l.flushErr() }

// busyLogs counts the open logs of this process whose MaybeFlush may have
// work (flushIdle false): while it is 0, AnyFlushDue lets the owner's
// once-a-second pass skip visiting every log.
var busyLogs atomic.Int64

// AnyFlushDue reports whether some open log of this process may have work
// for MaybeFlush (a flush.ms, a deleted segment waiting, or no MaybeFlush
// since it opened or its settings changed). While it is false, a pass that
// calls MaybeFlush on every log would do nothing.
func AnyFlushDue() bool { return busyLogs.Load() != 0 }

// setFlushIdleLocked sets flushIdle, keeping busyLogs. REQUIRES: writer
// lock held.
func (l *Log) setFlushIdleLocked(idle bool) {
	if l.flushIdle.Swap(idle) == idle || !l.flushCounted {
		return
	}
	if idle {
		busyLogs.Add(-1)
	} else {
		busyLogs.Add(1)
	}
}

// uncountFlushLocked takes a log that is closing (or closed by a failure)
// out of busyLogs, and clears flushIdle so that MaybeFlush answers
// ErrClosed. REQUIRES: writer lock held.
func (l *Log) uncountFlushLocked() {
	if !l.flushIdle.Swap(false) && l.flushCounted {
		busyLogs.Add(-1)
	}
	l.flushCounted = false
}
