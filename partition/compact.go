package partition

import (
	"fmt"
	"strings"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// Log compaction (cleanup.policy=compact): the cleanable segments keep, for
// each key, only the record with the key's latest offset below the first
// uncleanable offset; tombstones (a key with a null value) go too once
// their batch is older than delete.retention.ms.
//
// The first uncleanable offset is Kafka's: the smaller of the high
// watermark and the active segment's base. Records at or above it decide
// nothing and are never rewritten: above the high watermark a record may
// still be truncated (a follower's divergent tail, a leader deposed before
// replicating it), and dropping a committed value in favour of one that is
// later truncated would leave the key with no value at all. The active
// segment is never touched; a closed segment is cleaned only when it ends
// at or below the first uncleanable offset. Records without a key and control batches stay.
// Every batch keeps its base offset and offset span, even when all its
// records go (an empty batch, as Kafka's cleaner leaves for producer
// state), so offsets stay contiguous batch by batch and consumers skip the
// gaps. Each replica compacts its own log.

// compactionLimit bounds the size of a segment the cleaner rewrites in
// memory; larger ones are left for a streaming cleaner.
const compactionLimit = 256 << 20

// Compact cleans the closed segments of a compacted topic that end at or
// below the first uncleanable offset, and returns how many it rewrote.
func (r *Replica) Compact(now time.Time) (int, error) {
	tc := r.Config()
	if !strings.Contains(tc.String(config.CleanupPolicy), "compact") {
		return 0, nil
	}
	segs := r.log.Segments()
	if len(segs) < 2 {
		return 0, nil
	}
	limit := r.firstUncleanable(segs)
	latest, err := r.latestOffsets(limit)
	if err != nil {
		return 0, err
	}
	horizon := now.UnixMilli() - tc.Int64(config.DeleteRetentionMs)
	cleaned := 0
	for _, s := range segs {
		if s.Active || s.NextOffset > limit {
			break // this and every later segment hold uncleanable offsets
		}
		if s.Size == 0 || s.Size > compactionLimit || s.BaseOffset < r.log.LogStartOffset() {
			continue
		}
		b, err := r.log.ReadBytes(s.BaseOffset, int(s.Size), s.NextOffset, true)
		if err != nil {
			return cleaned, err
		}
		out, changed, err := compactSegment(b, latest, horizon, r.maxDecomp)
		if err != nil {
			return cleaned, fmt.Errorf("compacting segment %d: %w", s.BaseOffset, err)
		}
		if !changed {
			continue
		}
		if err := r.log.ReplaceSegment(s.BaseOffset, out); err != nil {
			return cleaned, err
		}
		cleaned++
	}
	r.logger.Debug("compaction pass", "first_uncleanable", limit, "segments_cleaned", cleaned)
	return cleaned, nil
}

// firstUncleanable is Kafka's first uncleanable offset: the high watermark
// or the active segment's base, whichever is smaller.
func (r *Replica) firstUncleanable(segs []segment.SegmentInfo) int64 {
	limit := r.HighWatermark()
	for _, s := range segs {
		if s.Active {
			limit = min(limit, s.BaseOffset)
		}
	}
	return limit
}

// latestOffsets maps every key below limit to the offset of its last
// record there.
func (r *Replica) latestOffsets(limit int64) (map[string]int64, error) {
	latest := map[string]int64{}
	for off := r.log.LogStartOffset(); off < limit; {
		b, err := r.log.ReadBytes(off, 8<<20, limit, true)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			break
		}
		next := off
		err = batch.Split(b, func(h *batch.Header, raw []byte) error {
			next = h.NextOffset()
			if h.Control() || h.LastOffset() >= limit {
				return nil // a batch that reaches the limit decides nothing
			}
			return batch.ForEachRecord(raw, r.maxDecomp, func(rec *batch.Record) error {
				if rec.Key != nil {
					latest[string(rec.Key)] = h.BaseOffset + int64(rec.OffsetDelta)
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
		if next <= off {
			break
		}
		off = next
	}
	return latest, nil
}

// compactSegment rewrites the batches of one segment. It is a pure function
// of the bytes, the latest offsets and the tombstone horizon.
func compactSegment(b []byte, latest map[string]int64, horizon int64, maxDecomp int) ([]byte, bool, error) {
	out := make([]byte, 0, len(b))
	changed := false
	err := batch.Split(b, func(h *batch.Header, raw []byte) error {
		if h.Control() {
			out = append(out, raw...)
			return nil
		}
		recs, err := batch.Records(raw, maxDecomp)
		if err != nil {
			return err
		}
		kept := recs[:0]
		for _, rec := range recs {
			off := h.BaseOffset + int64(rec.OffsetDelta)
			switch {
			case rec.Key == nil:
			case latest[string(rec.Key)] != off:
				continue // overwritten later in the log
			case rec.Value == nil && h.MaxTimestamp < horizon:
				continue // a tombstone past delete.retention.ms
			}
			kept = append(kept, rec)
		}
		if len(kept) == len(recs) {
			out = append(out, raw...)
			return nil
		}
		changed = true
		if len(kept) == 0 {
			out = append(out, batch.EmptyLike(raw)...)
			return nil
		}
		opts := batch.BuildOptions{
			BaseOffset: h.BaseOffset, LeaderEpoch: h.PartitionLeaderEpoch, Codec: h.Codec(),
			LogAppendTime: h.LogAppendTime(), FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
			ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
			Transactional: h.Transactional(), KeepOffsetDeltas: true,
		}
		nb, err := batch.Build(nil, opts, kept)
		if err != nil {
			return err
		}
		batch.SetLastOffsetDelta(nb, h.LastOffsetDelta)
		out = append(out, nb...)
		return nil
	})
	return out, changed, err
}
