package segment

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

const batchHeaderSize = batch.HeaderSize

// segment is one .log file and its two indexes.
//
// Locking: base and the file handles never change. The other fields change
// only while the Log's writer lock and l.mu are both held; the writer reads
// them with only the writer lock, readers with l.mu held.
type segment struct {
	fs   vfs.FS
	dir  string
	base int64
	log  vfs.File
	idx  offsetIndex
	tidx timeIndex

	size            int64 // bytes of whole batches in .log
	next            int64 // offset after the last batch; base when empty
	maxTs           int64 // largest batch max timestamp; -1 when empty
	offMaxTs        int64 // last offset of the batch that holds maxTs
	firstTs         int64 // max timestamp of the first batch (segment.ms); -1 when empty
	bytesSinceIndex int64
	// synced: every byte is fsynced (rolled segments). The background
	// flusher sets it, hence atomic.
	synced atomic.Bool
	// renamed: the files carry the .deleted suffix; removeFiles must then
	// leave the plain names alone (a cleaned segment reuses them).
	renamed bool
	// txns are the .txnindex entries (txn_index.go), in marker order.
	txns []AbortedTxn
	// txnErr is why the .txnindex found at open was unreadable (then
	// dropped), for the loader to report.
	txnErr error
	// tail holds the places of the newest batches while the segment is
	// active and takes appends (nil before the first append after Open, and
	// after a roll). Guarded by l.mu.
	tail *tailRing
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, fileName(s.base, suffix))
}

// openSegment opens (creating when missing) the three files of the segment at
// base. The indexes are opened as found; the loader checks or rebuilds them.
//
// indexBytes > 0 is the active segment's: an empty one's missing indexes
// are made at its first batch (materializeIndexes), any other's
// preallocated at that size (openIndex).
func openSegment(fs vfs.FS, dir string, base int64, indexBytes int) (*segment, error) {
	s := &segment{fs: fs, dir: dir, base: base, next: base, maxTs: -1, offMaxTs: base, firstTs: -1}
	f, err := fs.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	s.log = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size = st.Size()
	// An empty segment's missing indexes wait for its first batch.
	lazy := indexBytes > 0 && s.size == 0
	idx, err := openIndex(fs, s.path(indexSuffix), offsetIndexEntrySize, indexBytes, lazy)
	if err != nil {
		f.Close()
		return nil, err
	}
	tidx, err := openIndex(fs, s.path(timeIndexSuffix), timeIndexEntrySize, indexBytes, lazy)
	if err != nil {
		idx.close(false)
		f.Close()
		return nil, err
	}
	s.idx = offsetIndex{mmapIndex: idx, base: base}
	s.tidx = timeIndex{mmapIndex: tidx, base: base}
	if err := s.loadTxnIndex(); err != nil {
		s.txnErr = err
		fs.Remove(s.path(txnIndexSuffix))
	}
	return s, nil
}

// readHeader reads and parses the batch header at pos. A header that is
// short, malformed, or whose batch would run past limit is ErrCorruption.
func (s *segment) readHeader(pos, limit int64, buf *[batchHeaderSize]byte) (batch.Header, error) {
	if limit-pos < batchHeaderSize {
		return batch.Header{}, fmt.Errorf("%w: %s: %d bytes at position %d, short of a batch header",
			ErrCorruption, filepath.Base(s.log.Name()), limit-pos, pos)
	}
	if _, err := s.log.ReadAt(buf[:], pos); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return batch.Header{}, fmt.Errorf("%w: %s at %d: %w", ErrCorruption, filepath.Base(s.log.Name()), pos, err)
	}
	h, err := batch.ParseHeader(buf[:])
	if err != nil {
		return h, fmt.Errorf("%w: %s at %d: %w", ErrCorruption, filepath.Base(s.log.Name()), pos, err)
	}
	if int64(h.Size()) > limit-pos {
		return h, fmt.Errorf("%w: %s at %d: batch of %d bytes runs past %d", ErrCorruption, filepath.Base(s.log.Name()), pos, h.Size(), limit)
	}
	return h, nil
}

// header is readHeader, answered from the tail ring when it holds the
// batch at pos (then only the offset and size fields are set).
// REQUIRES: l.mu held.
func (s *segment) header(pos, limit int64, buf *[batchHeaderSize]byte) (batch.Header, error) {
	if s.tail != nil {
		if h, ok := s.tail.headerAt(pos); ok && pos+int64(h.Size()) <= limit {
			return h, nil
		}
	}
	return s.readHeader(pos, limit, buf)
}

// findBatch returns the position and header of the first batch at or after
// the index entry for target whose last offset is >= target. found is false
// when no batch in the segment's first size bytes qualifies.
// REQUIRES: l.mu held (read) or the writer lock.
func (s *segment) findBatch(target int64, size int64) (pos int64, h batch.Header, found bool, err error) {
	_, pos = s.idx.lookup(target)
	var buf [batchHeaderSize]byte
	for pos < size {
		h, err = s.readHeader(pos, size, &buf)
		if err != nil {
			return pos, h, false, err
		}
		if h.LastOffset() >= target {
			return pos, h, true, nil
		}
		pos += int64(h.Size())
	}
	return pos, h, false, nil
}

// applyBatch updates the segment's metadata and indexes for a batch written
// at pos, as Kafka's LogSegment.append does: an index entry (batch last
// offset, batch position) once more than interval bytes were appended since
// the previous entry. Full indexes are left alone (the caller rolls first).
// REQUIRES: writer lock and l.mu held.
func (s *segment) applyBatch(h *batch.Header, pos int64, interval int64) {
	if pos == 0 {
		s.firstTs = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.offMaxTs = h.MaxTimestamp, h.LastOffset()
	}
	if s.bytesSinceIndex > interval {
		if !s.idx.full() {
			s.idx.append(h.LastOffset(), pos)
		}
		if !s.timeIndexFull() {
			s.tidx.maybeAppend(s.maxTs, s.offMaxTs)
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(h.Size())
	s.size = pos + int64(h.Size())
	s.next = h.NextOffset()
}

// materializeIndexes makes the indexes an empty active segment left
// absent, before its first batch is written.
// REQUIRES: writer lock held; takes l.mu for the remap (see mmapIndex).
func (l *Log) materializeIndexes(s *segment) error {
	if !s.idx.absent && !s.tidx.absent {
		return nil
	}
	l.lockState()
	defer l.mu.Unlock()
	if err := s.idx.materialize(); err != nil {
		return err
	}
	return s.tidx.materialize()
}

// timeIndexFull keeps the last slot free for the final entry written when
// the segment stops being active (Kafka's TimeIndex.isFull).
func (s *segment) timeIndexFull() bool { return s.tidx.n >= s.tidx.capacity()-1 }

// sealTimeIndex records the segment's max timestamp as the time index's last
// entry, as Kafka does when a segment is rolled or closed.
// REQUIRES: writer lock and l.mu held.
func (s *segment) sealTimeIndex() {
	if s.maxTs >= 0 && s.tidx.n < s.tidx.capacity() {
		s.tidx.maybeAppend(s.maxTs, s.offMaxTs)
	}
}

// sync fsyncs the .log and both index files. The indexes are synced
// through a descriptor (the one a roll left pending, else one opened for
// the fsync), not msync: on Linux the page cache is shared, so fsync writes
// back pages dirtied through the mapping (msync(MS_SYNC) is the same call
// on a range), it also makes a trim's new size durable (a roll trims
// without syncing), and it never touches the mapping, which the writer may
// replace. Callers keep the segment from being closed meanwhile
// (flusher.go).
func (s *segment) sync() error {
	if err := fsync(s.log); err != nil {
		return err
	}
	if err := s.idx.fsyncFile(); err != nil {
		return err
	}
	if err := s.tidx.fsyncFile(); err != nil {
		return err
	}
	return s.syncTxnIndex()
}

// close releases the files, trimming the indexes when trim is set.
func (s *segment) close(trim bool) error {
	err := s.idx.close(trim)
	if e := s.tidx.close(trim); err == nil {
		err = e
	}
	if e := s.log.Close(); err == nil {
		err = e
	}
	return err
}

// renameDeleted renames the segment's files with a .deleted suffix; open
// handles and index mappings keep working, and the indexes follow their
// files (they reopen them by path).
func (s *segment) renameDeleted() error { return s.renameDeletedExcept("") }

// renameDeletedExcept is renameDeleted leaving the file with suffix keep
// in place (a cleaned segment keeps its .txnindex).
func (s *segment) renameDeletedExcept(keep string) error {
	for _, suf := range segmentSuffixes {
		if suf == keep {
			continue
		}
		if err := s.fs.Rename(s.path(suf), s.path(suf)+deletedSuffix); err != nil && !os.IsNotExist(err) {
			return err
		}
		switch suf {
		case indexSuffix:
			s.idx.path = s.path(suf) + deletedSuffix
		case timeIndexSuffix:
			s.tidx.path = s.path(suf) + deletedSuffix
		}
	}
	s.renamed = true
	return nil
}

// removeFiles removes the segment's files, renamed or not.
func (s *segment) removeFiles() error {
	var first error
	for _, suf := range segmentSuffixes {
		paths := []string{s.path(suf), s.path(suf) + deletedSuffix}
		if s.renamed {
			paths = paths[1:]
		}
		for _, p := range paths {
			if err := s.fs.Remove(p); err != nil && !os.IsNotExist(err) && first == nil {
				first = err
			}
		}
	}
	return first
}
