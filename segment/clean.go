package segment

import (
	"fmt"
	"os"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
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
//
// The .txnindex keeps the entries whose ABORT marker (a control batch of
// the entry's producer at its last offset) cleaned still holds, and loses
// the others: an entry without its marker would make a read_committed
// consumer skip the producer's later records. The caller drops a marker
// only once none of its transaction's records is left, so a marker left
// without its entry (as a crash between the two files can leave it) is
// harmless.
func (l *Log) ReplaceSegment(base int64, cleaned []byte) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	idx, old, err := l.replaceableSegment(base)
	if err != nil {
		return err
	}
	aborts, err := checkCleaned(cleaned, base, old.next)
	if err != nil {
		return err
	}
	// Crash safety, as Kafka's cleaner: the new bytes are written and
	// fsynced as .log.cleaned (a stray one is removed at open), then
	// committed by renaming to .log.swap (Open completes a swap it finds),
	// and only then do the old files step aside and the swap take the name.
	// A .txnindex that loses entries goes the same way, one step ahead:
	// .txnindex.cleaned, then .txnindex.swap before the .log.swap, so that
	// Open, completing the log's swap, completes the index's too (an empty
	// .txnindex.swap stands for no file); without a .log.swap it is a stray.
	l.mu.RLock()
	oldTxns := old.txns
	l.mu.RUnlock()
	kept, txnChanged := keptTxnEntries(oldTxns, aborts)
	if err := l.writeCleanedSwap(old, cleaned, kept, txnChanged); err != nil {
		return err
	}
	if err := l.completeCleanedSwap(old, txnChanged); err != nil {
		return err
	}
	s, err := l.openCleaned(base)
	if err != nil {
		return err
	}
	l.dropFlushes(func(x *segment) bool { return x == old })
	l.lockState()
	l.mu.segments[idx] = s
	l.mu.Unlock()
	l.logger.Info("segment cleaned", "base", base, "bytes_before", old.size, "bytes_after", s.size)
	return l.retireReplaced(old)
}

// replaceableSegment returns the segment at base and its place in
// l.mu.segments, or why it cannot be replaced: the log is closed, no
// segment starts at base, or it is the active segment.
// REQUIRES: writer lock held.
func (l *Log) replaceableSegment(base int64) (int, *segment, error) {
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
		return 0, nil, ErrClosed
	case idx < 0:
		return 0, nil, fmt.Errorf("%w: no segment at %d", ErrOffsetOutOfRange, base)
	case idx == last:
		return 0, nil, fmt.Errorf("segment: the active segment %d cannot be replaced", base)
	}
	return idx, old, nil
}

// checkCleaned checks that cleaned is whole batches with good CRCs that
// follow each other from base to end, and returns the ABORT markers it
// holds: offset -> producer id.
func checkCleaned(cleaned []byte, base, end int64) (aborts map[int64]int64, err error) {
	next := base
	aborts = map[int64]int64{}
	if err := batch.Split(cleaned, func(h *batch.Header, b []byte) error {
		if h.BaseOffset != next {
			return fmt.Errorf("%w: cleaned batch at %d, expected %d", ErrNonContiguous, h.BaseOffset, next)
		}
		if err := batch.VerifyCRC(b); err != nil {
			return err
		}
		if h.Control() {
			if m, ok, err := batch.ParseEndTxnMarker(b); err == nil && ok && !m.Commit {
				aborts[h.BaseOffset] = h.ProducerID
			}
		}
		next = h.NextOffset()
		return nil
	}); err != nil {
		return nil, err
	}
	if next != end {
		return nil, fmt.Errorf("%w: cleaned segment ends at %d, the segment at %d", ErrNonContiguous, next, end)
	}
	return aborts, nil
}

// keptTxnEntries rebuilds the replaced segment's .txnindex: the encoded
// entries of txns whose ABORT marker (its producer's, at its last offset)
// is among aborts, and whether any entry was dropped.
func keptTxnEntries(txns []AbortedTxn, aborts map[int64]int64) (kept []byte, changed bool) {
	nkept := 0
	for _, a := range txns {
		if pid, ok := aborts[a.LastOffset]; ok && pid == a.ProducerID {
			kept = a.AppendTo(kept)
			nkept++
		}
	}
	return kept, nkept != len(txns)
}

// writeCleanedSwap writes and fsyncs the cleaned bytes beside old's files
// as .log.cleaned and, when the .txnindex changed, its entries kept as
// .txnindex.swap (writeTxnSwap); then it commits the replacement by
// renaming .log.cleaned to .log.swap and fsyncing the directory. A failure
// before the rename removes what it wrote.
// REQUIRES: writer lock held.
func (l *Log) writeCleanedSwap(old *segment, cleaned, kept []byte, txnChanged bool) error {
	tmp := old.path(logSuffix + cleanedSuffix)
	swap := old.path(logSuffix + swapSuffix)
	txnSwap := old.path(txnIndexSuffix + swapSuffix)
	// No .txnindex.swap of a failed earlier call may ride along with this
	// .log.swap.
	if err := l.fs.Remove(txnSwap); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := vfs.WriteFile(l.fs, tmp, cleaned, 0o644); err != nil {
		return err
	}
	if err := syncFile(l.fs, tmp); err != nil {
		l.fs.Remove(tmp)
		return err
	}
	if txnChanged {
		if err := writeTxnSwap(old, kept); err != nil {
			l.fs.Remove(tmp)
			return err
		}
		if err := cleanCrashPoint("txnindex swap written"); err != nil {
			return err
		}
	}
	if err := l.fs.Rename(tmp, swap); err != nil {
		l.fs.Remove(tmp)
		l.fs.Remove(txnSwap)
		return err
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return err
	}
	return cleanCrashPoint("log swapped")
}

// completeCleanedSwap finishes a committed replacement, as Open would: the
// .txnindex.swap (when the .txnindex changed) takes its place, old's other
// files are renamed .deleted, and the .log.swap takes the .log's name.
// REQUIRES: writer lock held.
func (l *Log) completeCleanedSwap(old *segment, txnChanged bool) error {
	if txnChanged {
		if err := completeTxnSwap(l.fs, l.dir, old.path(txnIndexSuffix)); err != nil {
			return err
		}
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
		if err := cleanCrashPoint("txnindex in place"); err != nil {
			return err
		}
	}
	// The .txnindex stays where it is (the new one, when it lost entries):
	// the cleaned segment keeps the retained markers' offsets.
	if err := old.renameDeletedExcept(txnIndexSuffix); err != nil {
		return err
	}
	return l.fs.Rename(old.path(logSuffix+swapSuffix), old.path(logSuffix))
}

// openCleaned opens the cleaned segment at base, rebuilds its indexes from
// its batches and fsyncs them and the directory; the caller owns the
// segment returned, which it closes on a failure.
// REQUIRES: writer lock held.
func (l *Log) openCleaned(base int64) (*segment, error) {
	s, err := openSegment(l.fs, l.dir, base, 0)
	if err != nil {
		return nil, err
	}
	if _, err := l.recoverSegment(s, false); err != nil {
		s.close(false)
		return nil, err
	}
	if err := s.idx.resize(0); err != nil {
		s.close(false)
		return nil, err
	}
	if err := s.tidx.resize(0); err != nil {
		s.close(false)
		return nil, err
	}
	s.synced.Store(true)
	if err := syncDir(l.fs, l.dir); err != nil {
		s.close(false)
		return nil, err
	}
	return s, nil
}

// retireReplaced queues the replaced segment old, whose files are already
// renamed .deleted (scheduleDelete would rename again, now the new
// segment's files), for removal after file.delete.delay; with no delay it
// removes them now.
// REQUIRES: writer lock held; old is no longer in l.mu.segments.
func (l *Log) retireReplaced(old *segment) error {
	due := l.cfg.Now().Add(l.cfg.FileDeleteDelay)
	l.w.pendingDeletes = append(l.w.pendingDeletes, pendingDelete{seg: old, due: due})
	if l.cfg.FileDeleteDelay == 0 {
		return l.removeDueLocked(due)
	}
	return nil
}

func syncFile(fs vfs.FS, path string) error {
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return fsync(f) // the crash tests' hook
}

// writeTxnSwap writes the cleaned segment's .txnindex (entries, possibly
// none) as .txnindex.cleaned, fsyncs it and renames it .txnindex.swap.
func writeTxnSwap(old *segment, entries []byte) error {
	fs := old.fs
	tmp := old.path(txnIndexSuffix + cleanedSuffix)
	if err := vfs.WriteFile(fs, tmp, entries, 0o644); err != nil {
		return err
	}
	if err := syncFile(fs, tmp); err != nil {
		fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, old.path(txnIndexSuffix+swapSuffix)); err != nil {
		fs.Remove(tmp)
		return err
	}
	return nil
}

// completeTxnSwap puts the .txnindex.swap beside path in its place: an
// empty one removes the .txnindex (the file exists only while it has
// entries). No .txnindex.swap is nothing to do.
func completeTxnSwap(fs vfs.FS, dir, path string) error {
	swap := path + swapSuffix
	fi, err := fs.Stat(swap)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Size() > 0 {
		return fs.Rename(swap, path)
	}
	if err := fs.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := syncDir(fs, dir); err != nil {
		return err
	}
	return fs.Remove(swap)
}

// cleanCrashHook, when set (tests only), is called after each durable step
// of ReplaceSegment that a crash could follow; an error stops it there,
// leaving the files as a crash would.
var cleanCrashHook func(step string) error

func cleanCrashPoint(step string) error {
	if cleanCrashHook == nil {
		return nil
	}
	return cleanCrashHook(step)
}
