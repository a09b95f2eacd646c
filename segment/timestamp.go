package segment

import (
	"fmt"
	"io"

	"github.com/shale-io/shale/segment/batch"
)

// OffsetForTimestamp answers ListOffsets for a timestamp as Kafka's
// fetchOffsetByTimestamp does: the offset and timestamp of the first record
// at or after the log start offset whose timestamp is >= ts. The time index
// narrows the search to a few batches; only the batch that first reaches ts
// is decoded (decompressed if needed). ok is false when no record qualifies.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return -1, -1, false, ErrClosed
	}
	for _, s := range l.mu.segments {
		if s.maxTs < ts || s.next <= l.mu.logStart {
			continue
		}
		_, from := s.tidx.lookup(ts)
		from = max(from, l.mu.logStart)
		_, pos := s.idx.lookup(from)
		var hbuf [batchHeaderSize]byte
		for pos < s.size {
			h, err := s.readHeader(pos, s.size, &hbuf)
			if err != nil {
				return -1, -1, false, err
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= l.mu.logStart {
				off, t, ok, err := l.searchBatch(s, pos, &h, ts)
				if err != nil || ok {
					return off, t, ok, err
				}
			}
			pos += int64(h.Size())
		}
	}
	return -1, -1, false, nil
}

// searchBatch decodes the batch at pos for its first record >= ts.
// REQUIRES: l.mu held (read).
func (l *Log) searchBatch(s *segment, pos int64, h *batch.Header, ts int64) (int64, int64, bool, error) {
	b := make([]byte, h.Size())
	if _, err := s.log.ReadAt(b, pos); err != nil && err != io.EOF {
		return -1, -1, false, err
	}
	off, t, ok, err := firstRecordAtOrAfter(b, h, ts, l.mu.logStart, l.cfg.Decompress)
	if err != nil {
		return -1, -1, false, fmt.Errorf("%w: batch at %s:%d: %w", ErrCorruption, fileName(s.base, logSuffix), pos, err)
	}
	return off, t, ok, nil
}

// MaxTimestampOffset answers ListOffsets MAX_TIMESTAMP (KIP-734): the offset
// and timestamp of the first record holding the largest timestamp in the
// log. ok is false for an empty log.
func (l *Log) MaxTimestampOffset() (offset, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return -1, -1, false, ErrClosed
	}
	var best *segment
	for _, s := range l.mu.segments {
		if s.next > l.mu.logStart && s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		return -1, -1, false, nil
	}
	pos, h, found, err := best.findBatch(best.offMaxTs, best.size)
	if err != nil || !found {
		return -1, -1, false, err
	}
	return l.searchBatch(best, pos, &h, best.maxTs)
}
