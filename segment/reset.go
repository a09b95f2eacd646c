package segment

import (
	"fmt"
	"slices"
)

// ResetTo discards every batch of the log and restarts it, empty, at
// offset: the log start offset and the log end offset both become offset.
// It is how a follower whose leader keeps only offsets >= offset on local
// disk (older ones are in remote storage, KIP-405) starts from the remote
// tail instead of copying history.
//
// epochs is the leader-epoch history the data below offset was written
// with (from the remote tail's epochs object). Entries starting at or after
// offset are dropped, and the history is cut at the new log start as
// retention would cut it: what stays is the epoch in force at offset,
// starting at offset (the leader, whose local log starts there too, has the
// same). It must be ordered by epoch and start offset. Until a batch is
// appended that entry is the only one; it starts at the log end, and Open
// keeps it however often the empty log is reopened.
//
// Old segments leave like retention-deleted ones (renamed .deleted, closed
// and removed after FileDeleteDelay), so readers holding a ReadResult keep
// valid bytes until then.
//
// Crash safety: the steps are ordered so that Open after a crash at any
// point finds one of three consistent logs: the old log, or a prefix of its
// segments (the newest segments are renamed away first); an empty log at
// offset 0 (no segment left yet); or the reset log at offset with the new
// epoch history (the history is written before the segment at offset is
// created, so the new segment never reopens with the old history). A caller
// that keeps files of its own beside the log (producer-state snapshots)
// should write the one at offset before calling ResetTo when offset is above
// the current log end: Open's callers drop snapshots above the log end, so
// a crash before the reset completes leaves no snapshot that the old log
// does not reach.
func (l *Log) ResetTo(offset int64, epochs []EpochEntry) error {
	return l.resetTo(offset, epochs, true)
}

// ResetToWithHistory is ResetTo keeping the history below offset: entries
// starting at or after offset are dropped, and the rest stay as given, so
// that a follower rebuilt from the remote tail places the epochs of the
// remote data as the leader does (Kafka's follower takes the leader-epoch
// checkpoint of the remote segment, from the partition's log start). The
// caller passes the history from the partition's log start.
func (l *Log) ResetToWithHistory(offset int64, epochs []EpochEntry) error {
	return l.resetTo(offset, epochs, false)
}

func (l *Log) resetTo(offset int64, epochs []EpochEntry, cutAtOffset bool) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("%w: reset to %d", ErrOffsetOutOfRange, offset)
	}
	cache := make(epochCache, 0, len(epochs))
	for _, e := range epochs {
		if last, ok := cache.latest(); ok && (e.Epoch <= last.Epoch || e.StartOffset < last.StartOffset) {
			return fmt.Errorf("%w: epoch history out of order at epoch %d offset %d", ErrCorruption, e.Epoch, e.StartOffset)
		}
		if e.Epoch < 0 || e.StartOffset < 0 {
			return fmt.Errorf("%w: bad epoch entry %d at %d", ErrCorruption, e.Epoch, e.StartOffset)
		}
		cache = append(cache, e)
	}
	// The same history on disk and in memory: Open keeps an entry starting
	// at the log start of an empty log. Found beside an empty log at 0 (a
	// crash before the new segment), the new history starts at offset, above
	// that log's end, and Open drops it.
	cache.truncateFromEnd(offset)
	if cutAtOffset {
		cache.truncateFromStart(offset)
	}

	// The flusher lets go of the old segments before they are renamed.
	l.dropFlushes(nil)
	// 1. The old segments step aside, newest first: a crash leaves a prefix.
	// Readers keep the old segments (their open files) until the swap.
	old := slices.Clone(l.mu.segments)
	slices.Reverse(old)
	var err error
	for _, o := range old {
		if err = o.renameDeleted(); err == nil {
			err = resetStep("renamed")
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		err = syncDir(l.fs, l.dir)
	}
	// 2. The new history, before any segment can pair with it.
	if err == nil {
		err = l.writeEpochs(cache)
	}
	if err == nil {
		err = resetStep("history")
	}
	// 3. The segment at offset, then the offsets that describe it.
	var s *segment
	if err == nil {
		s, err = l.newEmptySegmentLocked(offset)
	}
	if err == nil {
		err = resetStep("segment")
	}
	if err == nil {
		err = writeOffsetFile(l.fs, l.dir, logStartOffsetFile, offset)
	}
	if err == nil {
		err = resetStep("log-start")
	}
	if err == nil {
		err = l.setRecoveryPoint(offset)
	}
	if err != nil {
		if s != nil {
			s.close(false)
		}
		// The old segments are renamed away and the new one is not in
		// place: the log refuses further use until reopened, which
		// recovers one of the states above. Readers that got in before
		// keep the old open files.
		l.lockState()
		l.mu.closed = true
		l.mu.Unlock()
		l.uncountFlushLocked()
		return fmt.Errorf("segment: reset to %d: %w", offset, err)
	}
	l.lockState()
	l.mu.segments = []*segment{s}
	l.mu.logStart, l.mu.leo, l.mu.epochs = offset, offset, cache
	l.mu.Unlock()
	l.w.unflushed = 0
	l.w.lastFlush = l.cfg.Now()
	l.logger.Info("log reset", "offset", offset, "segments_dropped", len(old), "epochs", len(cache))
	// The old files are already renamed .deleted: queue them as they are
	// (as ReplaceSegment does), to be closed and removed when due.
	due := l.cfg.Now().Add(l.cfg.FileDeleteDelay)
	for _, o := range old {
		l.w.pendingDeletes = append(l.w.pendingDeletes, pendingDelete{seg: o, due: due})
	}
	if l.cfg.FileDeleteDelay == 0 {
		return l.removeDueLocked(due)
	}
	return nil
}

// newEmptySegmentLocked creates and fsyncs (with its directory entry) an
// empty active segment at base.
// REQUIRES: writer lock held.
func (l *Log) newEmptySegmentLocked(base int64) (*segment, error) {
	s, err := openSegment(l.fs, l.dir, base, 0)
	if err != nil {
		return nil, err
	}
	if s.size != 0 {
		s.close(false)
		return nil, fmt.Errorf("%w: new segment %s already holds %d bytes", ErrCorruption, fileName(base, logSuffix), s.size)
	}
	err = s.idx.resize(l.cfg.SegmentIndexBytes)
	if err == nil {
		err = s.tidx.resize(l.cfg.SegmentIndexBytes)
	}
	if err == nil {
		err = s.sync()
	}
	if err == nil {
		err = syncDir(l.fs, l.dir)
	}
	if err != nil {
		s.close(false)
		return nil, err
	}
	return s, nil
}

// resetCrashHook, when set (tests only), is called after each durable step
// of ResetTo; an error stops the reset there, leaving the files as a crash
// at that point would.
var resetCrashHook func(step string) error

func resetStep(step string) error {
	if resetCrashHook == nil {
		return nil
	}
	return resetCrashHook(step)
}
