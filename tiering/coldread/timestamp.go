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
// and only the batch that first reaches ts is decoded. ok is false when no
// remote record qualifies. Errors as Read.
func (r *Reader) OffsetForTimestamp(ctx context.Context, topic string, p int32, ts int64) (offset, timestamp int64, ok bool, err error) {
	s, found := controlplane.SegmentForTimestamp(r.segments(topic, p), ts)
	if !found {
		return -1, -1, false, nil
	}
	err = r.run(ctx, func(ctx context.Context) error {
		var err error
		offset, timestamp, ok, err = r.offsetForTimestamp(ctx, s, ts)
		return err
	})
	if err != nil {
		r.stats.errors.Add(1)
		return -1, -1, false, err
	}
	return offset, timestamp, ok, nil
}

func (r *Reader) offsetForTimestamp(ctx context.Context, s controlplane.RemoteSegment, ts int64) (int64, int64, bool, error) {
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
	obj := object{r: r, key: key, size: s.Size}
	for pos := idx.lookup(tidx.lookup(ts, s.BaseOffset)); pos < s.Size; {
		h, err := obj.header(ctx, pos)
		if err != nil {
			return -1, -1, false, err
		}
		if h.MaxTimestamp >= ts {
			b, err := obj.appendRange(ctx, nil, pos, pos+int64(h.Size()))
			if err != nil {
				return -1, -1, false, err
			}
			off, t, ok, err := firstAtOrAfter(b, &h, ts)
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

// firstAtOrAfter finds the first record of the whole batch b (header h)
// whose timestamp is >= ts. With LogAppendTime every record carries the
// batch's max timestamp.
func firstAtOrAfter(b []byte, h *batch.Header, ts int64) (int64, int64, bool, error) {
	if h.LogAppendTime() {
		return h.BaseOffset, h.MaxTimestamp, h.MaxTimestamp >= ts, nil
	}
	var off, t int64
	err := batch.ForEachRecord(b, maxDecompressed, func(rec *batch.Record) error {
		if rt := h.FirstTimestamp + rec.TimestampDelta; rt >= ts {
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
