package segment

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// The transaction index (.txnindex): per segment, the transactions aborted
// by a marker in that segment, laid out as Kafka's TransactionIndex: a
// sequence of version 0 AbortedTxn entries, big endian, 34 bytes each:
// version int16, producer id int64, first offset int64, last offset int64
// (the ABORT marker's offset), last stable offset int64 (the LSO once the
// transaction was aborted). The file exists only while it has entries.
// read_committed fetches return the entries that overlap the range they
// read, so that consumers drop the aborted records.

const (
	txnIndexSuffix = ".txnindex"
	// AbortedTxnSize is the size of one .txnindex entry (Kafka's
	// AbortedTxn.TOTAL_SIZE).
	AbortedTxnSize = 34
)

// AbortedTxn is one .txnindex entry.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64 // the transaction's first offset in the partition
	LastOffset  int64 // the ABORT marker's offset
	// LastStableOffset is the partition's LSO after the abort: the first
	// offset of the earliest transaction still open, or LastOffset+1.
	LastStableOffset int64
}

// AppendTo appends the entry's version 0 encoding to b.
func (a AbortedTxn) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// DecodeTxnIndex parses a .txnindex file (local or from the bucket): a
// length that is not a whole number of entries, an entry version other
// than 0, or an entry whose offsets are inconsistent (first above last,
// last offsets not increasing) is ErrCorruption.
func DecodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	if len(b)%AbortedTxnSize != 0 {
		return nil, fmt.Errorf("%w: transaction index of %d bytes is not a whole number of %d-byte entries", ErrCorruption, len(b), AbortedTxnSize)
	}
	out := make([]AbortedTxn, 0, len(b)/AbortedTxnSize)
	be := binary.BigEndian
	for i := 0; i < len(b); i += AbortedTxnSize {
		e := b[i : i+AbortedTxnSize]
		if v := int16(be.Uint16(e)); v != 0 {
			return nil, fmt.Errorf("%w: transaction index entry %d has version %d", ErrCorruption, i/AbortedTxnSize, v)
		}
		a := AbortedTxn{
			ProducerID: int64(be.Uint64(e[2:])), FirstOffset: int64(be.Uint64(e[10:])),
			LastOffset: int64(be.Uint64(e[18:])), LastStableOffset: int64(be.Uint64(e[26:])),
		}
		if a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || (len(out) > 0 && a.LastOffset <= out[len(out)-1].LastOffset) {
			return nil, fmt.Errorf("%w: transaction index entry %d %+v out of order", ErrCorruption, i/AbortedTxnSize, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// loadTxnIndex reads the segment's .txnindex into s.txns. A missing file
// is no entry. REQUIRES: only the opener holds s.
func (s *segment) loadTxnIndex() error {
	b, err := s.fs.ReadFile(s.path(txnIndexSuffix))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	txns, err := DecodeTxnIndex(b)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(s.path(txnIndexSuffix)), err)
	}
	s.txns = txns
	return nil
}

// appendTxnFile appends one entry to the .txnindex file, fsyncing it when
// sync is set. REQUIRES: writer lock held.
func (s *segment) appendTxnFile(a AbortedTxn, sync bool) error {
	f, err := s.fs.OpenFile(s.path(txnIndexSuffix), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(a.AppendTo(nil)); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := fsync(f); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// truncateTxnFile cuts the .txnindex file to the entries whose marker is
// before offset (removing it when none is left) and returns how many stay;
// the caller then cuts s.txns under l.mu. REQUIRES: writer lock held.
func (s *segment) truncateTxnFile(offset int64) (int, error) {
	n := 0
	for n < len(s.txns) && s.txns[n].LastOffset < offset {
		n++
	}
	switch {
	case n == len(s.txns):
		return n, nil
	case n == 0:
		if err := s.fs.Remove(s.path(txnIndexSuffix)); err != nil && !os.IsNotExist(err) {
			return len(s.txns), err
		}
		return 0, nil
	}
	f, err := s.fs.OpenFile(s.path(txnIndexSuffix), os.O_RDWR, 0)
	if err != nil {
		return len(s.txns), err
	}
	err = f.Truncate(int64(n * AbortedTxnSize))
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return len(s.txns), err
	}
	return n, nil
}

// dropStrayTxns removes, at open, the entries whose marker is not in the
// segment as recovered ([base, next)): a crash that cut the .log after the
// entry was written, or a foreign file. The file is rewritten without them
// (removed when none is left). REQUIRES: writer lock and l.mu held (load).
func (s *segment) dropStrayTxns() error {
	kept := s.txns[:0]
	for _, a := range s.txns {
		if a.LastOffset >= s.base && a.LastOffset < s.next {
			kept = append(kept, a)
		}
	}
	if len(kept) == len(s.txns) {
		return nil
	}
	s.txns = kept
	if len(kept) == 0 {
		if err := s.fs.Remove(s.path(txnIndexSuffix)); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	var b []byte
	for _, a := range kept {
		b = a.AppendTo(b)
	}
	return writeFileAtomic(s.fs, s.dir, filepath.Base(s.path(txnIndexSuffix)), b)
}

// truncateTxns is truncateTxnFile followed by the cut in memory.
// REQUIRES: writer lock held, l.mu not held.
func (l *Log) truncateTxns(s *segment, offset int64) error {
	n, err := s.truncateTxnFile(offset)
	l.lockState()
	s.txns = s.txns[:n]
	l.mu.Unlock()
	return err
}

// syncTxnIndex fsyncs the .txnindex file when it exists.
func (s *segment) syncTxnIndex() error {
	f, err := s.fs.OpenFile(s.path(txnIndexSuffix), os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := fsync(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AppendAbortedTxn records an aborted transaction in the .txnindex of the
// segment holding its marker (a.LastOffset), which must be in the log and
// after every entry already recorded (ErrOffsetOutOfRange otherwise, as
// Kafka's TransactionIndex refuses). The file is fsynced at once (aborts
// are rare): the producer snapshot a later roll writes no longer replays
// the marker, so the entry must not be lost while the snapshot survives.
func (l *Log) AppendAbortedTxn(a AbortedTxn) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if a.LastOffset < l.mu.logStart || a.LastOffset >= l.mu.leo || a.FirstOffset > a.LastOffset {
		return fmt.Errorf("%w: aborted transaction %+v outside the log [%d, %d)", ErrOffsetOutOfRange, a, l.mu.logStart, l.mu.leo)
	}
	i := l.segmentFor(a.LastOffset)
	if i < 0 {
		return fmt.Errorf("%w: no segment holds offset %d", ErrOffsetOutOfRange, a.LastOffset)
	}
	for _, s := range l.mu.segments[i:] {
		if n := len(s.txns); n > 0 && s.txns[n-1].LastOffset >= a.LastOffset {
			return fmt.Errorf("%w: aborted transaction at %d not after the last recorded at %d", ErrOffsetOutOfRange, a.LastOffset, s.txns[n-1].LastOffset)
		}
	}
	s := l.mu.segments[i]
	if err := s.appendTxnFile(a, true); err != nil {
		return err
	}
	l.lockState()
	s.txns = append(s.txns, a)
	l.mu.Unlock()
	return nil
}

// DropAbortedTxnsFrom removes every .txnindex entry whose marker is at or
// after offset: the replica rebuilds them by replaying the log from there.
func (l *Log) DropAbortedTxnsFrom(offset int64) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	for _, s := range l.mu.segments {
		if err := l.truncateTxns(s, offset); err != nil {
			return err
		}
	}
	return nil
}

// AbortedTxns returns the aborted transactions that overlap [from, upTo):
// those whose last offset is at or after from and whose first offset is
// below upTo, in marker order, as Kafka's collectAbortedTransactions does
// for a read_committed fetch of that range: it reads the .txnindex of the
// segment holding from and of the later ones, until an entry's last stable
// offset reaches upTo. The caller owns the returned slice.
func (l *Log) AbortedTxns(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	i := max(l.segmentFor(from), 0)
	for _, s := range l.mu.segments[i:] {
		for _, a := range s.txns {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
			if a.LastStableOffset >= upTo {
				return out
			}
		}
	}
	return out
}

// SegmentAbortedTxns returns the .txnindex entries of the segment at base
// (tiering uploads them with it); nil when it has none or there is no such
// segment. The caller owns the returned slice.
func (l *Log) SegmentAbortedTxns(base int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.mu.segments {
		if s.base == base {
			return append([]AbortedTxn(nil), s.txns...)
		}
	}
	return nil
}
