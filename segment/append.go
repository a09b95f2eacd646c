package segment

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/shale-io/shale/segment/batch"
)

// AppendInfo describes what an append wrote.
type AppendInfo struct {
	FirstOffset          int64 // base offset of the first batch
	LastOffset           int64 // last offset of the last batch
	MaxTimestamp         int64 // largest batch max timestamp; -1 when none
	OffsetOfMaxTimestamp int64 // last offset of the batch holding MaxTimestamp
	Batches              []BatchInfo
}

// BatchInfo is what the idempotence layer needs from each appended batch.
type BatchInfo struct {
	BaseOffset    int64
	LastOffset    int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	LastSequence  int32
	Transactional bool
	Control       bool
}

// Append is the leader append: it gives the batches in batches (one or more
// whole RecordBatch v2, already validated by the caller) consecutive offsets
// from the log end offset, stamps leaderEpoch into each, and writes them.
// Base offsets and epochs are stamped into batches in place; the caller
// keeps ownership of the slice. A batch larger than SegmentBytes is
// ErrTooLarge; malformed headers fail the whole append before anything is
// written. A disk error may leave part of the append written: the
// returned AppendInfo lists the batches that are in the log (the LEO says
// the same), also beside an error. Every FlushMessages records, Append
// flushes; a flush that fails after the write returns the whole
// AppendInfo with the error (wrapping ErrSyncFailed). After an fsync
// failure (Err) every append fails with it and writes nothing.
func (l *Log) Append(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.flushErr(); err != nil {
		return AppendInfo{}, err
	}
	next := l.mu.leo
	n, err := l.checkBatches(batches, func(b []byte, h batch.Header) error {
		batch.SetBaseOffset(b, next)
		batch.SetPartitionLeaderEpoch(b, leaderEpoch)
		next += int64(h.LastOffsetDelta) + 1
		return nil
	})
	if err != nil {
		return AppendInfo{}, err
	}
	return l.write(batches, n)
}

// AppendAsFollower appends batches fetched from the leader as they are:
// offsets and leader epochs are kept. The first base offset must be the log
// end offset and each batch must follow the previous one, else
// ErrNonContiguous and nothing is written. Errors after the write are as
// for Append.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.flushErr(); err != nil {
		return AppendInfo{}, err
	}
	next := l.mu.leo
	n, err := l.checkBatches(batches, func(_ []byte, h batch.Header) error {
		if h.BaseOffset != next {
			return fmt.Errorf("%w: batch base offset %d, log end offset %d", ErrNonContiguous, h.BaseOffset, next)
		}
		next = h.NextOffset()
		return nil
	})
	if err != nil {
		return AppendInfo{}, err
	}
	return l.write(batches, n)
}

// checkBatches walks the batches, calls fn on each (which may stamp it) and
// returns their count.
// REQUIRES: writer lock held.
func (l *Log) checkBatches(b []byte, fn func(b []byte, h batch.Header) error) (int, error) {
	n := 0
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return n, err
		}
		size := h.Size()
		if size > len(b) {
			return n, fmt.Errorf("%w: batch of %d bytes, %d left", batch.ErrCorrupt, size, len(b))
		}
		if int64(size) > l.cfg.SegmentBytes {
			return n, fmt.Errorf("%w: the record batch is %d bytes in append to partition %s, more than segment.bytes %d: a batch must fit in one segment (raise segment.bytes or lower the producer's batch size)",
				ErrTooLarge, size, filepath.Base(l.dir), l.cfg.SegmentBytes)
		}
		if err := fn(b[:size], h); err != nil {
			return n, err
		}
		n++
		b = b[size:]
	}
	return n, nil
}

// write appends n checked batches, rolling where needed: one positioned
// write per batch (produce requests carry one batch per partition).
// REQUIRES: writer lock held.
func (l *Log) write(b []byte, n int) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1,
		Batches: make([]BatchInfo, 0, n)}
	var records int64
	for len(b) > 0 {
		h, _ := batch.ParseHeader(b) // checked by checkBatches
		size := h.Size()
		if err := l.maybeRoll(&h); err != nil {
			return info, err
		}
		if err := l.noteEpoch(&h); err != nil {
			return info, err
		}
		s := l.active()
		pos := s.size
		if _, err := s.log.WriteAt(b[:size], pos); err != nil {
			return info, err
		}
		l.lockState()
		s.applyBatch(&h, pos, int64(l.cfg.IndexIntervalBytes))
		if s.tail == nil {
			s.tail = new(tailRing)
		}
		s.tail.add(&h, pos)
		l.mu.leo = s.next
		l.mu.Unlock()

		if info.FirstOffset < 0 {
			info.FirstOffset = h.BaseOffset
		}
		info.LastOffset = h.LastOffset()
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		info.Batches = append(info.Batches, BatchInfo{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(),
			ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
			LastSequence: h.LastSequence(), Transactional: h.Transactional(), Control: h.Control()})
		records += int64(h.LastOffsetDelta) + 1
		b = b[size:]
	}
	l.w.unflushed += records
	l.maybeWriteback()
	if l.cfg.FlushMessages > 0 && l.w.unflushed >= l.cfg.FlushMessages {
		return info, l.flushLocked()
	}
	return info, nil
}

// noteEpoch records a new leader epoch in the cache and its checkpoint
// before the batch that starts it is written. The checkpoint's fsync waits
// for the next flush (installEpochsDeferred): a crash before it re-reads
// the batch and assigns its epoch again. (A follower taking over thousands
// of partitions' new epochs at once fsynced twice per partition in its
// fetch round, one partition after another.)
// REQUIRES: writer lock held.
func (l *Log) noteEpoch(h *batch.Header) error {
	if last, ok := l.mu.epochs.latest(); ok && h.PartitionLeaderEpoch <= last.Epoch || h.PartitionLeaderEpoch < 0 {
		return nil
	}
	epochs := append(epochCache(nil), l.mu.epochs...)
	epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	return l.installEpochsDeferred(epochs)
}

// maybeRoll rolls the active segment before the batch h when Kafka would:
// the segment would pass segment.bytes, its first batch is older than
// segment.ms, an index is full, or h's offsets do not fit 32-bit relative
// offsets. An empty active segment is never rolled.
// REQUIRES: writer lock held.
func (l *Log) maybeRoll(h *batch.Header) error {
	s := l.active()
	if s.size == 0 {
		return nil
	}
	now := l.cfg.Now().UnixMilli()
	switch {
	case s.size+int64(h.Size()) > l.cfg.SegmentBytes,
		s.firstTs >= 0 && now-s.firstTs > l.cfg.SegmentAge.Milliseconds(),
		s.idx.full(), s.timeIndexFull(),
		h.LastOffset()-s.base > math.MaxInt32:
		return l.rollLocked()
	}
	return nil
}
