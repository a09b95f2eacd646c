package coldread

import (
	"context"
	"errors"
	"fmt"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment/batch"
)

// maxDecompressed bounds the decompressed records of one batch searched for
// a timestamp.
const maxDecompressed = 256 << 20

// errFound stops a record walk.
var errFound = errors.New("found")

// OffsetForTimestamp answers ListOffsets for a timestamp over the remote
// segments: the offset and timestamp of the first record whose timestamp is
// >= ts. The segment comes from metadata (the first whose max timestamp
// reaches ts), the start of the search from its remote .timeindex and .index,
// and only the batch that first reaches ts is decoded. Only retained records
// count: none below the log start (the remote segments' start, or the one
// DeleteRecords recorded), so the answer is never below it. ok is false
// when no remote record qualifies. Errors as Read.
func (r *Reader) OffsetForTimestamp(ctx context.Context, topic string, p int32, ts int64) (offset, timestamp int64, ok bool, err error) {
	segs, start, retained := r.segmentsAndStart(topic, p)
	if !retained {
		return -1, -1, false, nil
	}
	segs = retainedSegments(segs, start)
	err = r.run(ctx, func(ctx context.Context) error {
		// The first segment whose max timestamp reaches ts holds the answer,
		// unless its records that do lie below the log start: then a later one.
		for len(segs) > 0 {
			s, found := controlplane.SegmentForTimestamp(segs, ts)
			if !found {
				return nil
			}
			var err error
			if offset, timestamp, ok, err = r.offsetForTimestamp(ctx, s, ts, start); err != nil || ok {
				return err
			}
			for len(segs) > 0 && segs[0].BaseOffset <= s.BaseOffset {
				segs = segs[1:]
			}
		}
		return nil
	})
	if err != nil {
		r.stats.errors.Add(1)
		return -1, -1, false, err
	}
	if !ok {
		return -1, -1, false, nil
	}
	return offset, timestamp, ok, nil
}

// retainedSegments returns the segments of segs holding an offset at or
// above start.
func retainedSegments(segs []controlplane.RemoteSegment, start int64) []controlplane.RemoteSegment {
	out := segs[:0:0]
	for _, s := range segs {
		if s.EndOffset >= start {
			out = append(out, s)
		}
	}
	return out
}

// offsetForTimestamp searches segment s for its first record at or above
// the offset start whose timestamp is >= ts.
func (r *Reader) offsetForTimestamp(ctx context.Context, s controlplane.RemoteSegment, ts, start int64) (int64, int64, bool, error) {
	tidx, err := r.timeIndexFor(ctx, s)
	if err != nil {
		return -1, -1, false, err
	}
	idx, err := r.offsetIndexFor(ctx, s)
	if err != nil {
		return -1, -1, false, err
	}
	key, err := objectKey(s, "log")
	if err != nil {
		return -1, -1, false, err
	}
	obj := object{r: r, key: key, size: objectSize(s)}
	for pos := idx.lookup(max(tidx.lookup(ts, s.BaseOffset), start)); pos < s.Size; {
		h, err := obj.header(ctx, pos)
		if err != nil {
			return -1, -1, false, err
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= start {
			b, err := obj.appendRange(ctx, nil, pos, pos+int64(h.Size()))
			if err != nil {
				return -1, -1, false, err
			}
			off, t, ok, err := firstAtOrAfter(b, &h, ts, start)
			if err != nil {
				return -1, -1, false, fmt.Errorf("%w: %s batch at %d: %w", ErrRemoteRead, key, pos, err)
			}
			if ok {
				return off, t, true, nil
			}
		}
		pos += int64(h.Size())
	}
	return -1, -1, false, nil
}

// firstAtOrAfter finds the first record of the whole batch b (header h) at
// or above the offset start whose timestamp is >= ts. With LogAppendTime
// every record carries the batch's max timestamp.
func firstAtOrAfter(b []byte, h *batch.Header, ts, start int64) (int64, int64, bool, error) {
	if h.LogAppendTime() {
		return max(h.BaseOffset, start), h.MaxTimestamp, h.MaxTimestamp >= ts && h.LastOffset() >= start, nil
	}
	var off, t int64
	err := batch.ForEachRecord(b, maxDecompressed, func(rec *batch.Record) error {
		if rt := h.FirstTimestamp + rec.TimestampDelta; rt >= ts && h.BaseOffset+int64(rec.OffsetDelta) >= start {
			off, t = h.BaseOffset+int64(rec.OffsetDelta), rt
			return errFound
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		return off, t, true, nil
	case err != nil:
		return -1, -1, false, err
	}
	return -1, -1, false, nil
}
