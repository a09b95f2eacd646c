package segment

import (
	"fmt"
	"os"

	"github.com/shale-io/shale/segment/batch"
)

// ReplaceSegment swaps the contents of the closed segment at base for
// cleaned, the same batches after log compaction: every batch keeps its base
// offset and last offset delta (so offsets stay contiguous at batch level,
// as recovery and Read require) and only records are dropped — Kafka's
// cleaner does the same. cleaned must start at base and end at the
// segment's next offset. The new file is written and fsynced beside the old
// one, then swapped under the writer lock; the old files go the way of
// retention-deleted ones (.deleted, removed after file.delete.delay), so
// readers holding them keep working. The active segment cannot be replaced.
func (l *Log) ReplaceSegment(base int64, cleaned []byte) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	l.mu.RLock()
	closed := l.mu.closed
	idx := -1
	for i, s := range l.mu.segments {
		if s.base == base {
			idx = i
		}
	}
	last := len(l.mu.segments) - 1
	var old *segment
	if idx >= 0 {
		old = l.mu.segments[idx]
	}
	l.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case idx < 0:
		return fmt.Errorf("%w: no segment at %d", ErrOffsetOutOfRange, base)
	case idx == last:
		return fmt.Errorf("segment: the active segment %d cannot be replaced", base)
	}
	next := base
	if err := batch.Split(cleaned, func(h *batch.Header, b []byte) error {
		if h.BaseOffset != next {
			return fmt.Errorf("%w: cleaned batch at %d, expected %d", ErrNonContiguous, h.BaseOffset, next)
		}
		if err := batch.VerifyCRC(b); err != nil {
			return err
		}
		next = h.NextOffset()
		return nil
	}); err != nil {
		return err
	}
	if next != old.next {
		return fmt.Errorf("%w: cleaned segment ends at %d, the segment at %d", ErrNonContiguous, next, old.next)
	}
	// Crash safety, as Kafka's cleaner: the new bytes are written and
	// fsynced as .log.cleaned (a stray one is removed at open), then
	// committed by renaming to .log.swap (Open completes a swap it finds),
	// and only then do the old files step aside and the swap take the name.
	tmp := old.path(logSuffix + cleanedSuffix)
	swap := old.path(logSuffix + swapSuffix)
	if err := os.WriteFile(tmp, cleaned, 0o644); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, swap); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	// The .txnindex stays: the cleaned segment keeps the same markers'
	// offsets, and its aborted transactions with them.
	if err := old.renameDeletedExcept(txnIndexSuffix); err != nil {
		return err
	}
	if err := os.Rename(swap, old.path(logSuffix)); err != nil {
		return err
	}
	s, err := openSegment(l.dir, base)
	if err != nil {
		return err
	}
	if _, err := l.recoverSegment(s, false); err != nil {
		s.close(false)
		return err
	}
	if err := s.idx.resize(0); err != nil {
		s.close(false)
		return err
	}
	if err := s.tidx.resize(0); err != nil {
		s.close(false)
		return err
	}
	s.synced.Store(true)
	if err := syncDir(l.dir); err != nil {
		s.close(false)
		return err
	}
	l.dropFlushes(func(x *segment) bool { return x == old })
	l.mu.Lock()
	l.mu.segments[idx] = s
	l.mu.Unlock()
	l.logger.Info("segment cleaned", "base", base, "bytes_before", old.size, "bytes_after", s.size)
	// The old files are already renamed .deleted (scheduleDelete would
	// rename again, now the new segment's files): queue them as they are.
	due := l.cfg.Now().Add(l.cfg.FileDeleteDelay)
	l.w.pendingDeletes = append(l.w.pendingDeletes, pendingDelete{seg: old, due: due})
	if l.cfg.FileDeleteDelay == 0 {
		return l.removeDueLocked(due)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
