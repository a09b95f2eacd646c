package segment

import "fmt"

// Roll closes the active segment to appends and starts a new one at the log
// end offset, as the size and time triggers do. Rolling an empty active
// segment does nothing.
func (l *Log) Roll() error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.active().size == 0 {
		return nil
	}
	return l.rollLocked()
}

// rollLocked makes a new empty segment at the LEO the active one, seals and
// trims the old one's indexes (without syncing) and queues the old segment
// for the background flusher, which fsyncs it and then raises the recovery
// point to its end; then calls OnRoll. The append path never waits for an
// fsync: the new segment's index files grow without one (they are empty;
// recovery rebuilds missing ones), and its directory entry is fsynced by the
// flusher (or Flush) before the recovery point passes its base
// (syncPendingDir). On ext4 any fsync on the append path would wait for the
// journal commit that the background fsync of the old segment starts.
// REQUIRES: writer lock held.
func (l *Log) rollLocked() error {
	if err := l.flushErr(); err != nil {
		return err
	}
	old := l.active()
	base := l.mu.leo
	s, err := openSegment(l.fs, l.dir, base, 0)
	if err != nil {
		return err
	}
	if s.size != 0 {
		s.close(false)
		return fmt.Errorf("%w: new segment %s already holds %d bytes", ErrCorruption, fileName(base, logSuffix), s.size)
	}
	if err := s.idx.resizeSync(l.cfg.SegmentIndexBytes, false); err != nil {
		s.close(false)
		return err
	}
	if err := s.tidx.resizeSync(l.cfg.SegmentIndexBytes, false); err != nil {
		s.close(false)
		return err
	}
	l.bg.dirDirty.Store(true)
	l.lockState()
	old.tail = nil // only the active segment keeps its tail
	old.sealTimeIndex()
	err = old.idx.trimNoSync()
	if e := old.tidx.trimNoSync(); err == nil {
		err = e
	}
	l.mu.segments = append(l.mu.segments, s)
	l.mu.Unlock()
	// Queued even when a trim failed: the segment is in the log now, and
	// the flusher (or flushLocked) must sync whatever it holds.
	l.queueFlush(old, base)
	if err != nil {
		return err
	}
	l.logger.Debug("rolled segment", "base", base, "previous", old.base, "size", old.size)
	if l.cfg.OnRoll != nil {
		l.cfg.OnRoll(base)
	}
	return nil
}

// Truncate drops every batch at or after offset (follower truncation after
// OffsetForLeaderEpoch): whole later segments, the tail of the segment that
// holds offset, their index entries and the epoch cache entries past the new
// end. A batch that straddles offset is dropped whole, so the new log end
// offset is the base of that batch (<= offset). Truncating at or past the
// LEO does nothing. Truncating below the log start offset empties the log
// and restarts it at offset. Readers that hold a ReadResult into dropped
// bytes may read garbage: the caller orders truncation after the fetches it
// serves, as Kafka does.
func (l *Log) Truncate(offset int64) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if offset >= l.mu.leo {
		return nil
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if offset <= l.mu.logStart {
		return l.truncateFullyLocked(offset)
	}
	i := l.segmentFor(offset)
	s := l.mu.segments[i]
	pos, h, found, err := s.findBatch(offset, s.size)
	if err != nil {
		return err
	}
	newEnd := s.next
	if found {
		newEnd = h.BaseOffset
	} else {
		pos = s.size
	}
	epochs := append(epochCache(nil), l.mu.epochs...)
	if epochs.truncateFromEnd(newEnd) {
		if err := l.writeEpochs(epochs); err != nil {
			return err
		}
	}
	gone := append([]*segment(nil), l.mu.segments[i+1:]...)
	// s and every later segment leave the flusher before they change.
	l.dropFlushes(func(x *segment) bool { return x.base >= s.base })
	// Then the recovery point comes down, before the cut: a crash in the
	// middle of it must re-read from below the new end.
	if err := l.setRecoveryPoint(min(l.RecoveryPoint(), newEnd)); err != nil {
		return err
	}
	l.lockState()
	err = s.log.Truncate(pos)
	if err == nil {
		err = l.truncateSegmentLocked(s, pos, newEnd)
	}
	l.mu.segments = l.mu.segments[:i+1]
	l.mu.leo = newEnd
	l.mu.epochs = epochs
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := l.truncateTxns(s, newEnd); err != nil {
		return err
	}
	for _, g := range gone {
		if e := g.close(false); err == nil {
			err = e
		}
		if e := g.removeFiles(); err == nil {
			err = e
		}
	}
	if err != nil {
		return err
	}
	// The cut is made durable before Truncate returns: a crash that lost
	// it (the ftruncate or the removals never synced) would bring back the
	// batches cut, of an older epoch, at offsets the history gives to the
	// epoch the caller appends in next, whose checkpoint is synced before
	// its first batch; the follower would then ask its leader about that
	// epoch, be told nothing diverged, and keep them
	// (TestCrashAtEverySync's history check).
	if e := s.sync(); e != nil {
		return l.failSync(fileName(s.base, logSuffix), e)
	}
	if len(gone) > 0 {
		if e := syncDir(l.fs, l.dir); e != nil {
			return l.failSync("directory", e)
		}
	}
	return nil
}

// truncateSegmentLocked makes s, cut at pos with next offset newEnd, the
// active segment again: index entries past the end go, the indexes regain
// their preallocated size, and the max timestamp is recomputed.
// REQUIRES: writer lock and l.mu held; the .log is already truncated to pos.
func (l *Log) truncateSegmentLocked(s *segment, pos, newEnd int64) error {
	s.idx.truncateToOffset(newEnd)
	s.tidx.truncateToOffset(newEnd)
	if s.tail != nil {
		s.tail.truncate(pos)
	}
	s.size, s.next = pos, newEnd
	s.synced.Store(false)
	if err := s.idx.resize(l.cfg.SegmentIndexBytes); err != nil {
		return err
	}
	if err := s.tidx.resize(l.cfg.SegmentIndexBytes); err != nil {
		return err
	}
	// As Kafka: the time index's last entry, then the batches after the
	// last offset index entry (headers the log wrote or Open checked).
	s.maxTs, s.offMaxTs = s.tidx.last()
	if pos == 0 {
		s.firstTs = -1
	}
	from := int64(0)
	if s.idx.n > 0 {
		_, from = s.idx.at(s.idx.n - 1)
	}
	var buf [batchHeaderSize]byte
	for p := from; p < s.size; {
		h, err := s.readHeader(p, s.size, &buf)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.offMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		p += int64(h.Size())
	}
	s.bytesSinceIndex = s.size - from
	return nil
}

// truncateFullyLocked drops every segment and restarts the log empty at offset.
// REQUIRES: writer lock held.
func (l *Log) truncateFullyLocked(offset int64) error {
	l.dropFlushes(nil)
	l.lockState()
	old := l.mu.segments
	l.mu.segments = nil
	var err error
	for _, s := range old {
		if e := s.close(false); err == nil {
			err = e
		}
		if e := s.removeFiles(); err == nil {
			err = e
		}
	}
	l.mu.Unlock()
	if err != nil {
		return err
	}
	s, err := l.startEmptyLocked(offset)
	if err != nil {
		// No segment is left to append to: the log is unusable until reopened.
		l.lockState()
		l.mu.closed = true
		l.mu.Unlock()
		l.uncountFlushLocked()
		return err
	}
	l.lockState()
	l.mu.segments = []*segment{s}
	l.mu.logStart, l.mu.leo, l.mu.epochs = offset, offset, nil
	l.mu.Unlock()
	if err := l.setRecoveryPoint(offset); err != nil {
		return err
	}
	return syncDir(l.fs, l.dir)
}

// startEmptyLocked creates the files of an empty log starting at offset.
// REQUIRES: writer lock held.
func (l *Log) startEmptyLocked(offset int64) (*segment, error) {
	s, err := openSegment(l.fs, l.dir, offset, 0)
	if err != nil {
		return nil, err
	}
	err = s.idx.resize(l.cfg.SegmentIndexBytes)
	if err == nil {
		err = s.tidx.resize(l.cfg.SegmentIndexBytes)
	}
	if err == nil {
		err = writeOffsetFile(l.fs, l.dir, logStartOffsetFile, offset)
	}
	if err == nil {
		err = l.writeEpochs(nil)
	}
	if err != nil {
		s.close(false)
		return nil, err
	}
	return s, nil
}
