package tiering

import (
	"context"
	"log/slog"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/invariants"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// partitionPass is one pass over one led partition: upload, report the
// remote state to the replica, total retention on the remote segments,
// local retention, and optionally the bucket reconciliation. settled is
// whether it did all it had to (nothing failed, no restore asked for), and
// due when time-based retention can next delete something (quiet.go).
func (m *Manager) partitionPass(ctx context.Context, t target, reconcile bool, restores []controlplane.QuarantineEntry) (due time.Time, settled bool) {
	logger := partLogger{m.log, t.rep.Topic(), t.rep.Partition()}
	prefix := PartitionPrefix(m.cfg.Prefix, t.rep.Topic(), t.id, t.rep.Partition())
	p := t.rep.Partition()
	// Segments are uploaded only below the last stable offset (at most the
	// high watermark): a remote segment holds no record of a transaction
	// still undecided, so its .txnindex is final (Kafka's RemoteLogManager
	// copies below the LSO too).
	hw := t.rep.LastStableOffset()
	recorded := m.recordedStart(t.id, p)
	m.applyLogStart(t.rep, t.id) // a leader elected before it saw a DeleteRecords
	local := t.rep.Log().Segments()
	remote := m.meta.ListRemoteSegments(t.id, p)
	// Interrupted deletes first (an upload abandoned when the bucket failed
	// leaves its record in DeleteStarted): while one cannot be finished the
	// bucket is still failing, and a new upload would only add a record
	// that cannot be cleaned up either, one per pass for as long as an
	// outage lasts.
	cleaned := true
	for _, rec := range InterruptedDeletes(remote) {
		if err := m.deleteRemote(ctx, t.epoch, rec); err != nil {
			m.bucketFailed(err)
			logger.Debug("interrupted remote delete still failing; uploads wait", "segment", rec.SegmentID, "err", err)
			cleaned = false
			break
		}
		m.bucketOK()
	}
	if cleaned {
		m.restoreRequested(ctx, t, restores, logger)
		remote = m.meta.ListRemoteSegments(t.id, p)
		recorded = m.recordedStart(t.id, p)
	}
	plan := UploadPlan(local, remote, hw, t.rep.Log().Epochs())
	if !cleaned {
		plan = nil
	}
	settled = cleaned && len(restores) == 0
	for _, seg := range plan {
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		if invariants.Enabled {
			// Tiering sees only offsets below the high watermark, and remote
			// offsets stay contiguous: no gap after the last remote segment.
			invariants.Check(seg.NextOffset <= hw, "%s-%d: uploading segment [%d, %d) past the last stable offset %d",
				t.rep.Topic(), p, seg.BaseOffset, seg.NextOffset, hw)
			end, ok := controlplane.RemoteLogEndOffset(m.meta.ListRemoteSegments(t.id, p))
			invariants.Check(!ok || seg.BaseOffset <= max(end+1, recorded), "%s-%d: uploading segment at %d leaves a gap after the remote end %d",
				t.rep.Topic(), p, seg.BaseOffset, end)
		}
		if _, err := m.upload(ctx, t, seg, prefix); err != nil {
			m.stats.uploadFailures.Add(1)
			if m.bucketFailed(err) {
				logger.Debug("segment upload failed; local segments kept", "base_offset", seg.BaseOffset, "err", err)
			} else {
				logger.Warn("segment upload failed; local segments kept", "base_offset", seg.BaseOffset, "err", err)
			}
			settled = false
			break // later segments wait: uploads go in offset order
		}
		m.bucketOK()
		m.stats.segmentsUploaded.Add(1)
	}
	remote = m.meta.ListRemoteSegments(t.id, p)
	tc := t.rep.Config()
	if cleaned {
		// Copies outside the lineage that the lineage's copies cover go
		// first: no reader that follows the lineage reads them.
		for _, rec := range OrphanCopies(remote, t.rep.Log().Epochs()) {
			if err := m.removeSegment(ctx, t, rec, controlplane.ReasonOrphanCopy); err != nil {
				if !m.bucketFailed(err) {
					logger.Warn("removing a remote copy outside the epoch lineage failed", "segment", rec.SegmentID, "err", err)
				}
				settled = false
				break
			}
			logger.Info("removed a remote copy outside the epoch lineage", "segment", rec.SegmentID,
				"base_offset", rec.BaseOffset, "end_offset", rec.EndOffset, "leader_epoch", rec.LeaderEpoch)
			m.stats.orphansDeleted.Add(1)
		}
		remote = m.meta.ListRemoteSegments(t.id, p)
		below := BelowLogStart(remote, recorded)
		plan := append(below,
			RemoteRetentionPlan(remote, local, m.now(), tc.Int64(config.RetentionMs), tc.Int64(config.RetentionBytes))...)
		for i, rec := range dedupSegments(plan) {
			reason := controlplane.ReasonRetention
			if i < len(below) {
				reason = controlplane.ReasonDeleteRecords
			}
			if err := m.removeSegment(ctx, t, rec, reason); err != nil {
				if !m.bucketFailed(err) {
					logger.Warn("remote segment deletion failed", "segment", rec.SegmentID, "err", err)
				}
				settled = false
				break
			}
			m.stats.remoteDeleted.Add(1)
		}
	}
	if reconcile && !m.reconcilePartition(ctx, t, prefix, logger) {
		settled = false
	}
	remote = m.meta.ListRemoteSegments(t.id, p)
	local = t.rep.Log().Segments()
	t.rep.SetRemoteState(partition.RemoteState{LogStart: remoteStart(remote, recorded),
		CopiedNext: CopiedNext(local, remote, t.rep.Log().Epochs())})
	if err := t.rep.ApplyRetention(m.now()); err != nil {
		logger.Warn("local retention failed", "err", err)
		return time.Time{}, false
	}
	return retentionDue(local, remote, tc), settled && ctx.Err() == nil
}

// partLogger logs for one partition's pass, with its topic and partition.
// It adds them only to what it logs: slog's With made a handler for each
// partition of each pass, which almost never logs.
type partLogger struct {
	log   *slog.Logger
	topic string
	p     int32
}

func (l partLogger) Debug(msg string, args ...any) { l.log.Debug(msg, l.with(args)...) }
func (l partLogger) Info(msg string, args ...any)  { l.log.Info(msg, l.with(args)...) }
func (l partLogger) Warn(msg string, args ...any)  { l.log.Warn(msg, l.with(args)...) }

func (l partLogger) with(args []any) []any {
	return append([]any{"topic", l.topic, "partition", l.p}, args...)
}

// InterruptedDeletes returns the records in DeleteStarted or
// DeleteFinished, in offset order: deletes to finish before anything else.
func InterruptedDeletes(remote []controlplane.RemoteSegment) []controlplane.RemoteSegment {
	var out []controlplane.RemoteSegment
	for _, r := range remote {
		if r.State == controlplane.DeleteStarted || r.State == controlplane.DeleteFinished {
			out = append(out, r)
		}
	}
	return out
}

// BelowLogStart returns the CopyFinished segments that lie wholly below the
// log start DeleteRecords recorded (-1: none), oldest first: deleted on
// purpose, they go whatever retention says.
func BelowLogStart(remote []controlplane.RemoteSegment, recorded int64) []controlplane.RemoteSegment {
	var out []controlplane.RemoteSegment
	for _, r := range remote {
		if r.State == controlplane.CopyFinished && r.EndOffset < recorded {
			out = append(out, r)
		}
	}
	return out
}

// dedupSegments drops repeated segment ids, keeping the first.
func dedupSegments(segs []controlplane.RemoteSegment) []controlplane.RemoteSegment {
	seen := map[string]bool{}
	out := segs[:0:0]
	for _, s := range segs {
		if !seen[s.SegmentID] {
			seen[s.SegmentID] = true
			out = append(out, s)
		}
	}
	return out
}

// UploadPlan returns the closed, non-empty local segments below hw (the
// last stable offset, at most the high watermark) whose offsets are not yet all in CopyFinished remote segments
// of the local log's lineage (epochs, the local leader-epoch history; see
// Covered), in offset order.
func UploadPlan(local []segment.SegmentInfo, remote []controlplane.RemoteSegment, hw int64, epochs []segment.EpochEntry) []segment.SegmentInfo {
	var out []segment.SegmentInfo
	for _, s := range local {
		if s.Active || s.NextOffset > hw {
			break
		}
		if s.NextOffset > s.BaseOffset && !Covered(remote, s.BaseOffset, s.NextOffset-1, epochs) {
			out = append(out, s)
		}
	}
	return out
}

// Covered reports whether every offset in [from, to] lies in a CopyFinished
// segment of remote (sorted by base offset) whose leader-epoch history
// agrees with epochs, the local log's, over the offsets it covers: a segment
// uploaded by an older leader whose records the current log replaced (a
// divergent tail truncated after a failover) holds other records at those
// offsets, and covers nothing here; it is an orphan of the lineage. With
// epochs nil the lineage is not checked. An empty range is covered.
func Covered(remote []controlplane.RemoteSegment, from, to int64, epochs []segment.EpochEntry) bool {
	pos := from
	for _, r := range remote {
		if pos > to {
			break
		}
		if r.State == controlplane.CopyFinished && r.BaseOffset <= pos && r.EndOffset >= pos &&
			(epochs == nil || SameLineage(epochs, r.SegmentEpochs, pos, min(to, r.EndOffset))) {
			pos = r.EndOffset + 1
		}
	}
	return pos > to
}

// SameLineage reports whether two leader-epoch histories (entries in
// offset order, each saying from which offset an epoch wrote) give every
// offset of [from, to] the same epoch. A history with no entry at or before
// from gives from its first entry's epoch (a history cut at a log start).
func SameLineage(local []segment.EpochEntry, remote []controlplane.EpochEntry, from, to int64) bool {
	x, y := restrictEpochs(local, from, to), restrictEpochs(remote, from, to)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// restrictEpochs returns the entries of es in force over [from, to]: the one
// at from (its start moved to from), then those starting inside.
func restrictEpochs(es []controlplane.EpochEntry, from, to int64) []controlplane.EpochEntry {
	var out []controlplane.EpochEntry
	for _, e := range es {
		if e.StartOffset > to {
			break
		}
		if e.StartOffset <= from {
			out = append(out[:0], controlplane.EpochEntry{Epoch: e.Epoch, StartOffset: from})
			continue
		}
		if len(out) == 0 {
			out = append(out, controlplane.EpochEntry{Epoch: e.Epoch, StartOffset: from})
			continue
		}
		if out[len(out)-1].Epoch != e.Epoch {
			out = append(out, e)
		}
	}
	return out
}

// CopiedNext returns the next offset of the longest run of local segments,
// from the oldest, that are committed remotely within the local log's
// lineage (epochs, see Covered); the local log start when the oldest is not.
func CopiedNext(local []segment.SegmentInfo, remote []controlplane.RemoteSegment, epochs []segment.EpochEntry) int64 {
	if len(local) == 0 {
		return 0
	}
	next := local[0].BaseOffset
	for _, s := range local {
		if s.Active || !Covered(remote, s.BaseOffset, s.NextOffset-1, epochs) {
			break
		}
		next = s.NextOffset
	}
	return next
}

// RemoteRetentionPlan returns the remote segments to delete for total
// retention, oldest first: records already in DeleteStarted or
// DeleteFinished (an interrupted delete, resumed), then the run of oldest
// CopyFinished segments past retention.ms (by max timestamp) or whose
// removal still leaves retention.bytes (as Kafka: a segment goes while the
// rest alone reach retention.bytes).
//
// The partition's size counts each offset once (RetainedBytes): right
// after a leader change the new leader's local segments hold offsets the
// old leader's uploads hold too, and where their boundaries differ two
// leaders' copies overlap; counting both would make in-retention data look
// like a breach and delete it (KAFKA-20732). The estimate errs low, so
// retention never deletes what a byte-exact count would keep.
func RemoteRetentionPlan(remote []controlplane.RemoteSegment, local []segment.SegmentInfo, now time.Time, retentionMs, retentionBytes int64) []controlplane.RemoteSegment {
	var out []controlplane.RemoteSegment
	for _, r := range remote {
		if r.State == controlplane.DeleteStarted || r.State == controlplane.DeleteFinished {
			out = append(out, r)
		}
	}
	finished, shares, total := RetainedBytes(remote, local)
	for i, r := range finished {
		expired := retentionMs >= 0 && r.MaxTimestamp >= 0 && now.UnixMilli()-r.MaxTimestamp > retentionMs
		oversize := retentionBytes >= 0 && total-shares[i] >= retentionBytes
		if !expired && !oversize {
			break
		}
		total -= shares[i]
		out = append(out, r)
	}
	return out
}

// RetainedBytes estimates the partition's size with every offset counted
// once. It returns the CopyFinished remote segments in offset order, the
// bytes each adds (its size, or for one that overlaps an earlier one the
// share of its size that its new offsets make up), and the total: those
// shares plus the local segments that hold no offset of a CopyFinished
// remote segment (one partly uploaded counts nothing, as in Kafka's
// onlyLocalLogSegmentsSize).
func RetainedBytes(remote []controlplane.RemoteSegment, local []segment.SegmentInfo) (finished []controlplane.RemoteSegment, shares []int64, total int64) {
	next := int64(-1) // the offsets below next are counted
	for _, r := range remote {
		if r.State != controlplane.CopyFinished || r.EndOffset < r.BaseOffset {
			continue
		}
		share := int64(0)
		switch {
		case r.BaseOffset >= next:
			share = r.Size
		case r.EndOffset >= next:
			share = r.Size * (r.EndOffset - next + 1) / (r.EndOffset - r.BaseOffset + 1)
		}
		next = max(next, r.EndOffset+1)
		finished, shares, total = append(finished, r), append(shares, share), total+share
	}
	for _, s := range local {
		if s.NextOffset > s.BaseOffset && !overlapsAny(finished, s.BaseOffset, s.NextOffset-1) {
			total += s.Size
		}
	}
	return finished, shares, total
}

// overlapsAny reports whether any of segs (sorted by base offset) holds an
// offset of [from, to].
func overlapsAny(segs []controlplane.RemoteSegment, from, to int64) bool {
	for _, r := range segs {
		if r.BaseOffset > to {
			break
		}
		if r.EndOffset >= from {
			return true
		}
	}
	return false
}
