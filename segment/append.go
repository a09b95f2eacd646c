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
	var one [1]batch.Checked // a produce request's partition holds one batch
	return l.appendLeader(one[:0], batches, leaderEpoch)
}

// AppendChecked is Append for batches the caller has parsed: bs as
// batch.ParseAll returns them, changed since only through batch.Checked's
// stampers, so that each Header is its Raw's. It parses no header. Base
// offsets and epochs are stamped through the same stampers, so on return
// each batch's Header is what the log holds for it; the caller keeps
// ownership of bs and the bytes. Errors are as for Append.
func (l *Log) AppendChecked(bs []batch.Checked, leaderEpoch int32) (AppendInfo, error) {
	return l.appendLeader(bs, nil, leaderEpoch)
}

// appendLeader is Append of the batches bs followed by those in raw.
func (l *Log) appendLeader(bs []batch.Checked, raw []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendWalked(bs, raw, appendWalk{epoch: leaderEpoch})
}

// AppendAsFollower appends batches fetched from the leader as they are:
// offsets and leader epochs are kept. The first base offset must be the log
// end offset and each batch must follow the previous one, else
// ErrNonContiguous and nothing is written. Errors after the write are as
// for Append.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	var one [1]batch.Checked
	return l.appendFollower(one[:0], batches)
}

// AppendCheckedAsFollower is AppendAsFollower for batches the caller has
// parsed, as for AppendChecked. It parses no header and changes no batch.
func (l *Log) AppendCheckedAsFollower(bs []batch.Checked) (AppendInfo, error) {
	return l.appendFollower(bs, nil)
}

// appendFollower is AppendAsFollower of the batches bs followed by those
// in raw.
func (l *Log) appendFollower(bs []batch.Checked, raw []byte) (AppendInfo, error) {
	return l.appendWalked(bs, raw, appendWalk{follower: true})
}

// appendWalked checks the batches bs followed by those in raw with walk,
// starting at the log end offset, and writes them: the leader's and the
// follower's append.
func (l *Log) appendWalked(bs []batch.Checked, raw []byte, walk appendWalk) (AppendInfo, error) {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.flushErr(); err != nil {
		return AppendInfo{}, err
	}
	walk.next = l.mu.leo
	bs, err := l.checkBatches(bs, raw, &walk)
	if err != nil {
		return AppendInfo{}, err
	}
	return l.write(bs)
}

// appendWalk is what an append does to each batch once it is checked: a
// leader append stamps the next offset and its leader epoch into it (through
// batch.Checked's stampers), a follower append requires that it start at
// the next offset. next is the offset after the batches walked so far.
type appendWalk struct {
	next     int64
	follower bool
	epoch    int32 // a leader append's
}

// checkBatches checks each batch of bs and then each of the concatenated
// batches in raw, in order, and walks each (w). The batches of raw are
// parsed as the walk reaches them, so that a malformed one fails after the
// checks of those before it, and appended to bs, which checkBatches
// returns. REQUIRES: writer lock held.
func (l *Log) checkBatches(bs []batch.Checked, raw []byte, w *appendWalk) ([]batch.Checked, error) {
	for i := range bs {
		c := &bs[i]
		if c.Header.Size() != len(c.Raw) {
			return nil, fmt.Errorf("%w: header says %d bytes, the checked batch holds %d", batch.ErrCorrupt, c.Header.Size(), len(c.Raw))
		}
		if err := l.checkBatch(c, w); err != nil {
			return nil, err
		}
	}
	for len(raw) > 0 {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			return nil, err
		}
		size := h.Size()
		if size > len(raw) {
			return nil, fmt.Errorf("%w: batch of %d bytes, %d left", batch.ErrCorrupt, size, len(raw))
		}
		bs = append(bs, batch.Checked{Header: h, Raw: raw[:size]})
		if err := l.checkBatch(&bs[len(bs)-1], w); err != nil {
			return nil, err
		}
		raw = raw[size:]
	}
	return bs, nil
}

// checkBatch checks that the whole batch c fits in a segment and walks it.
// REQUIRES: writer lock held.
func (l *Log) checkBatch(c *batch.Checked, w *appendWalk) error {
	if size := len(c.Raw); int64(size) > l.cfg.SegmentBytes {
		return fmt.Errorf("%w: the record batch is %d bytes in append to partition %s, more than segment.bytes %d: a batch must fit in one segment (raise segment.bytes or lower the producer's batch size)",
			ErrTooLarge, size, filepath.Base(l.dir), l.cfg.SegmentBytes)
	}
	if w.follower {
		if c.Header.BaseOffset != w.next {
			return fmt.Errorf("%w: batch base offset %d, log end offset %d", ErrNonContiguous, c.Header.BaseOffset, w.next)
		}
		w.next = c.Header.NextOffset()
		return nil
	}
	c.SetBaseOffset(w.next)
	c.SetPartitionLeaderEpoch(w.epoch)
	w.next += int64(c.Header.LastOffsetDelta) + 1
	return nil
}

// write appends the checked batches bs, rolling where needed: one
// positioned write per batch (produce requests carry one batch per
// partition). It parses no header: each batch's Header is its Raw's.
// REQUIRES: writer lock held.
func (l *Log) write(bs []batch.Checked) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1,
		Batches: make([]BatchInfo, 0, len(bs))}
	var records int64
	for i := range bs {
		h, raw := &bs[i].Header, bs[i].Raw
		if err := l.maybeRoll(h); err != nil {
			return info, err
		}
		l.noteEpoch(h)
		s := l.active()
		pos := s.size
		if err := l.materializeIndexes(s); err != nil {
			return info, err
		}
		if _, err := s.log.WriteAt(raw, pos); err != nil {
			return info, err
		}
		l.lockState()
		s.applyBatch(h, pos, int64(l.cfg.IndexIntervalBytes))
		if s.tail == nil {
			s.tail = new(tailRing)
		}
		s.tail.add(h, pos)
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
	}
	l.w.unflushed += records
	l.maybeWriteback()
	if l.cfg.FlushMessages > 0 && l.w.unflushed >= l.cfg.FlushMessages {
		return info, l.flushLocked()
	}
	return info, nil
}

// noteEpoch records a new leader epoch in the history before the batch
// that starts it is written. The checkpoint file follows later
// (installEpochsDeferred): a crash before it re-reads the batch and
// assigns its epoch again. (A follower taking over thousands of
// partitions' new epochs at once fsynced twice per partition in its fetch
// round, one partition after another; later it still made a temp file for
// each.)
// REQUIRES: writer lock held.
func (l *Log) noteEpoch(h *batch.Header) {
	if last, ok := l.mu.epochs.latest(); ok && h.PartitionLeaderEpoch <= last.Epoch || h.PartitionLeaderEpoch < 0 {
		return
	}
	epochs := append(epochCache(nil), l.mu.epochs...)
	epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	l.installEpochsDeferred(epochs)
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
