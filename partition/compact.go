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
// at or below the first uncleanable offset. Records without a key stay.
// Every batch keeps its base offset and offset span, even when all its
// records go (an empty batch, as Kafka's cleaner leaves for producer
// state), so offsets stay contiguous batch by batch and consumers skip the
// gaps. Each replica compacts its own log.
//
// Transactions, as Kafka's LogCleaner treats them: the first uncleanable
// offset is also at most the last stable offset, so no batch of a
// transaction still open (or whose marker is not replicated) is touched.
// The records of aborted transactions (the .txnindex) are dropped and take
// no part in deciding a key's latest value. A transactional batch left
// without records loses its transactional attribute (batch.EmptyOutsideTxn)
// so that no producer-state replay reopens its transaction. A marker goes
// (as an empty batch outside any transaction, keeping its offset) once its
// segment's newest timestamp is older than delete.retention.ms, the pass
// has seen every batch from the log start on, and the pass saw no batch of
// its transaction: for a COMMIT, no record of it left; for an ABORT, no
// batch of the aborted transaction, so the pass that empties the aborted
// batches keeps the marker and a later one removes it (Kafka's
// CleanedTransactionMetadata, whose onBatchRead notes an aborted batch in
// lastObservedBatchOffset and whose onControlBatchRead keeps the ABORT
// marker while one was observed). An ABORT marker's .txnindex entry goes
// with the marker and only with it (segment.Log.ReplaceSegment keeps the
// entries of the markers left, and swaps the .txnindex in before the
// log): a consumer that read an aborted transaction's entry without its
// marker would skip the producer's later records, while a marker without
// its entry is harmless once the aborted records are gone.

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
	aborted := newAbortedSet(r.log.AbortedTxns(r.log.LogStartOffset(), limit))
	latest, err := r.latestOffsets(limit, aborted)
	if err != nil {
		return 0, err
	}
	horizon := now.UnixMilli() - tc.Int64(config.DeleteRetentionMs)
	cleaned := 0
	// txns follows, from the log start on, which producers have a record
	// of a transaction left in the cleaned log or a batch of an aborted
	// one seen; it is exact only while no segment was skipped (seenAll).
	txns := txnTracker{retained: map[int64]bool{}, aborted: map[int64]bool{}, seenAll: true}
	for _, s := range segs {
		if s.Active || s.NextOffset > limit {
			break // this and every later segment hold uncleanable offsets
		}
		if s.BaseOffset < r.log.LogStartOffset() {
			txns.seenAll = false // its batches below the log start are not looked at
			continue
		}
		if s.Size == 0 {
			continue
		}
		if s.Size > compactionLimit {
			txns.seenAll = false
			continue
		}
		b, err := r.log.ReadBytes(s.BaseOffset, int(s.Size), s.NextOffset, true)
		if err != nil {
			return cleaned, err
		}
		markersGo := s.MaxTimestamp >= 0 && s.MaxTimestamp < horizon
		out, changed, err := compactSegment(b, latest, horizon, r.maxDecomp, aborted, &txns, markersGo)
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

// firstUncleanable is Kafka's first uncleanable offset: the last stable
// offset (at most the high watermark) or the active segment's base,
// whichever is smaller.
func (r *Replica) firstUncleanable(segs []segment.SegmentInfo) int64 {
	limit := r.LastStableOffset()
	for _, s := range segs {
		if s.Active {
			limit = min(limit, s.BaseOffset)
		}
	}
	return limit
}

// latestOffsets maps every key below limit to the offset of its last
// record there, aborted transactions left out.
func (r *Replica) latestOffsets(limit int64, aborted abortedSet) (map[string]int64, error) {
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
			if h.Control() || h.LastOffset() >= limit || aborted.has(h) {
				return nil // a batch that reaches the limit decides nothing, nor does an aborted one
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

// abortedSet holds a partition's aborted transactions by producer id.
type abortedSet map[int64][]segment.AbortedTxn

func newAbortedSet(txns []segment.AbortedTxn) abortedSet {
	s := abortedSet{}
	for _, a := range txns {
		s[a.ProducerID] = append(s[a.ProducerID], a)
	}
	return s
}

// has reports whether the data batch h belongs to an aborted transaction:
// transactional, of a producer with an aborted transaction whose range
// holds the batch.
func (s abortedSet) has(h *batch.Header) bool {
	if !h.Transactional() || h.Control() {
		return false
	}
	for _, a := range s[h.ProducerID] {
		if h.BaseOffset >= a.FirstOffset && h.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}

// txnTracker is what a compaction pass knows of transactions so far:
// the producers with a transactional record left since their last marker,
// and those with a batch of an aborted transaction seen since then.
type txnTracker struct {
	retained map[int64]bool
	aborted  map[int64]bool
	seenAll  bool // every batch from the log start on went through the pass
}

// compactSegment rewrites the batches of one segment. It is a pure function
// of the bytes, the latest offsets, the tombstone horizon, the aborted
// transactions and the pass's transaction tracking (updated); markersGo
// says the segment is past delete.retention.ms, so that a marker with no
// batch of its transaction seen by the pass may go.
func compactSegment(b []byte, latest map[string]int64, horizon int64, maxDecomp int,
	aborted abortedSet, txns *txnTracker, markersGo bool) ([]byte, bool, error) {
	out := make([]byte, 0, len(b))
	changed := false
	err := batch.Split(b, func(h *batch.Header, raw []byte) error {
		if h.Control() {
			m, isMarker, err := batch.ParseEndTxnMarker(raw)
			// An ABORT marker also stays while a record the .txnindex did
			// not mark aborted is left before it: its entry is missing,
			// and the marker is then what tells the records apart.
			seen := txns.retained[h.ProducerID] || (!m.Commit && txns.aborted[h.ProducerID])
			drop := err == nil && isMarker && markersGo && txns.seenAll && !seen
			delete(txns.retained, h.ProducerID)
			delete(txns.aborted, h.ProducerID)
			if drop {
				changed = true
				out = append(out, batch.EmptyOutsideTxn(raw)...)
				return nil
			}
			out = append(out, raw...)
			return nil
		}
		if aborted.has(h) {
			txns.aborted[h.ProducerID] = true
			changed = true
			out = append(out, batch.EmptyOutsideTxn(raw)...)
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
		if h.Transactional() && len(kept) > 0 {
			txns.retained[h.ProducerID] = true
		}
		if len(kept) == len(recs) {
			out = append(out, raw...)
			return nil
		}
		changed = true
		if len(kept) == 0 {
			out = append(out, batch.EmptyOutsideTxn(raw)...)
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
