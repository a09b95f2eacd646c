package segment

import (
	"fmt"
	"time"
)

// DeleteSegmentsBefore is retention: it removes every segment whose next
// offset is <= newLogStart, never the active one (Roll first to delete up
// to the LEO), and sets the log start offset to max(current, newLogStart),
// persisting it in the log-start-offset file. newLogStart may lie inside a
// segment; that segment stays but offsets below newLogStart become out of
// range. The leader-epoch history is cut at newLogStart. Removed segments
// are renamed .deleted and closed and removed after FileDeleteDelay (on a
// later MaybeFlush or Close), so a reader holding a ReadResult.File keeps
// reading valid bytes until then. newLogStart above the LEO is
// ErrOffsetOutOfRange.
func (l *Log) DeleteSegmentsBefore(newLogStart int64) (deleted int, err error) {
	return l.deleteSegmentsBefore(newLogStart, true)
}

// DeleteLocalSegmentsBefore is DeleteSegmentsBefore for a log whose older
// offsets are still retained elsewhere (remote storage, KIP-405): the
// segments go and the (local) log start moves, but the leader-epoch
// history keeps its entries below it, so that OffsetForLeaderEpoch still
// places the epochs of the remote data (Kafka cuts the history at the
// global log start only). The owner cuts it there with TruncateEpochsBefore.
func (l *Log) DeleteLocalSegmentsBefore(newLocalStart int64) (deleted int, err error) {
	return l.deleteSegmentsBefore(newLocalStart, false)
}

// TruncateEpochsBefore cuts the leader-epoch history at start, the
// partition's log start (local or remote): the entries wholly before it go
// and the one in force at it starts there. It reports whether the history
// changed; the checkpoint is written first, and on an error the history is
// unchanged.
func (l *Log) TruncateEpochsBefore(start int64) (bool, error) {
	l.mu.RLock()
	due := len(l.mu.epochs) > 0 && l.mu.epochs[0].StartOffset < start
	l.mu.RUnlock()
	if !due {
		// Nothing starts below start (truncateFromStart would change
		// nothing): the retention pass of an idle partition takes no
		// writer lock and copies no history.
		return false, nil
	}
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	epochs := append(epochCache(nil), l.mu.epochs...)
	if !epochs.truncateFromStart(start) {
		return false, nil
	}
	return true, l.installEpochs(epochs)
}

func (l *Log) deleteSegmentsBefore(newLogStart int64, cutEpochs bool) (deleted int, err error) {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return 0, ErrClosed
	}
	if newLogStart > l.mu.leo {
		return 0, fmt.Errorf("%w: new log start %d above log end %d", ErrOffsetOutOfRange, newLogStart, l.mu.leo)
	}
	segs := l.mu.segments
	for deleted < len(segs)-1 && segs[deleted].next <= newLogStart {
		deleted++
	}
	start := max(l.mu.logStart, newLogStart)
	if deleted > 0 {
		start = max(start, segs[deleted].base)
	}
	// The history first: Open keeps entries below the log start (a log
	// with remote storage keeps them on purpose), so a crash between the
	// two writes must leave the cut history, not the old start with it.
	epochs := append(epochCache(nil), l.mu.epochs...)
	if cutEpochs && epochs.truncateFromStart(start) {
		if err := l.writeEpochs(epochs); err != nil {
			return 0, err
		}
	}
	if start != l.mu.logStart {
		// Persist first: a crash must not resurrect offsets we dropped.
		if err := writeOffsetFile(l.fs, l.dir, logStartOffsetFile, start); err != nil {
			return 0, err
		}
	}
	gone := append([]*segment(nil), segs[:deleted]...)
	if deleted > 0 {
		l.dropFlushes(func(x *segment) bool { return x.base < segs[deleted].base })
	}
	l.lockState()
	l.mu.segments = append(segs[:0:0], segs[deleted:]...)
	l.mu.logStart = start
	l.mu.epochs = epochs
	l.mu.Unlock()
	return deleted, l.scheduleDelete(gone)
}

// scheduleDelete renames segments already unlinked from the log to .deleted
// and removes them after FileDeleteDelay (at once when the delay is 0).
// REQUIRES: writer lock held; the segments are no longer in l.mu.segments.
func (l *Log) scheduleDelete(gone []*segment) error {
	due := l.cfg.Now().Add(l.cfg.FileDeleteDelay)
	var first error
	for _, s := range gone {
		if err := s.renameDeleted(); err != nil && first == nil {
			first = err
		}
		l.logger.Info("scheduled segment for deletion", "file", fileName(s.base, logSuffix), "delay", l.cfg.FileDeleteDelay)
		l.w.pendingDeletes = append(l.w.pendingDeletes, pendingDelete{seg: s, due: due})
		l.setFlushIdleLocked(false)
	}
	if l.cfg.FileDeleteDelay == 0 {
		if err := l.removeDueLocked(due); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// removeDueLocked closes and removes the deleted segments due at or before now.
// REQUIRES: writer lock held.
func (l *Log) removeDueLocked(now time.Time) error {
	var first error
	keep := l.w.pendingDeletes[:0]
	for _, p := range l.w.pendingDeletes {
		if p.due.After(now) {
			keep = append(keep, p)
			continue
		}
		if err := p.seg.close(false); err != nil && first == nil {
			first = err
		}
		if err := p.seg.removeFiles(); err != nil && first == nil {
			first = err
		}
	}
	clear(l.w.pendingDeletes[len(keep):])
	l.w.pendingDeletes = keep
	return first
}

// PendingDeletes is the number of deleted segments whose files still wait
// for file.delete.delay.
func (l *Log) PendingDeletes() int {
	l.writer.Lock()
	defer l.writer.Unlock()
	return len(l.w.pendingDeletes)
}
