package segment

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
	return err
}

// flushLocked fsyncs the segments not yet synced and writes the recovery
// point. Rolled segments still queued for the background flusher are taken
// back and synced here (after the flusher's current fsync, if any). A
// background fsync failure is sticky: flushLocked returns it, since a
// retried fsync may succeed after the kernel dropped the unwritten pages.
// REQUIRES: writer lock held.
func (l *Log) flushLocked() error {
	l.dropFlushes(nil)
	if err := l.flushErr(); err != nil {
		return err
	}
	segs := l.mu.segments
	for _, s := range segs {
		if s.synced.Load() {
			continue
		}
		if err := s.sync(); err != nil {
			return err
		}
		if s != segs[len(segs)-1] {
			s.synced.Store(true)
		}
	}
	if err := l.syncPendingDir(); err != nil {
		return err
	}
	l.w.unflushed = 0
	l.w.lastFlush = l.cfg.Now()
	if l.RecoveryPoint() == l.mu.leo {
		return nil
	}
	return l.setRecoveryPoint(l.mu.leo)
}
