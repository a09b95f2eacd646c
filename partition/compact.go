package partition

import (
	"fmt"
	"strings"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment/batch"
)

// Log compaction (cleanup.policy=compact): the closed segments keep, for
// each key, only the record with the key's latest offset in the whole log;
// tombstones (a key with a null value) go too once their batch is older
// than delete.retention.ms. Records without a key and control batches stay.
// Every batch keeps its base offset and offset span, even when all its
// records go (an empty batch, as Kafka's cleaner leaves for producer
// state), so offsets stay contiguous batch by batch and consumers skip the
// gaps. Each replica compacts its own log.

// compactionLimit bounds the size of a segment the cleaner rewrites in
// memory; larger ones are left for a streaming cleaner.
const compactionLimit = 256 << 20

// Compact cleans the closed segments of a compacted topic and returns how
// many it rewrote.
func (r *Replica) Compact(now time.Time) (int, error) {
	tc := r.Config()
	if !strings.Contains(tc.String(config.CleanupPolicy), "compact") {
		return 0, nil
	}
	segs := r.log.Segments()
	if len(segs) < 2 {
		return 0, nil
	}
	latest, err := r.latestOffsets()
	if err != nil {
		return 0, err
	}
	horizon := now.UnixMilli() - tc.Int64(config.DeleteRetentionMs)
	cleaned := 0
	for _, s := range segs {
		if s.Active || s.Size == 0 || s.Size > compactionLimit || s.BaseOffset < r.log.LogStartOffset() {
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
	return cleaned, nil
}

// latestOffsets maps every key in the log to the offset of its last record.
func (r *Replica) latestOffsets() (map[string]int64, error) {
	latest := map[string]int64{}
	for off := r.log.LogStartOffset(); off < r.log.LogEndOffset(); {
		b, err := r.log.ReadBytes(off, 8<<20, r.log.LogEndOffset(), true)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			break
		}
		next := off
		err = batch.Split(b, func(h *batch.Header, raw []byte) error {
			next = h.NextOffset()
			if h.Control() {
				return nil
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
