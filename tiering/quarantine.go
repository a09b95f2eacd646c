package tiering

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
)

// The deletion safety net: every remote delete of committed data
// (retention, DeleteRecords, topic deletion, orphan cleanup) first becomes a
// quarantine entry in the control plane (controlplane.QuarantineEntry) for
// the topic's remote.delete.grace.ms, its objects left in the bucket; the
// controller purges entries past their grace. A restore request marks
// entries Restoring; the partition leader's pass brings them back into the
// remote log (or refuses, with a note) and moves the log start back.

// Errors of the quarantine verbs.
var (
	// ErrNotRestorable: the entry holds no segment metadata (an orphan
	// object), or its topic was deleted.
	ErrNotRestorable = errors.New("tiering: quarantine entry cannot be restored")
	// ErrBeingRestored: a purge of an entry a restore has claimed.
	ErrBeingRestored = errors.New("tiering: quarantine entry is being restored")
	// ErrNoSuchEntry: the selector matched no entry.
	ErrNoSuchEntry = errors.New("tiering: no such quarantine entry")
)

// deleteGrace is a topic's remote.delete.grace.ms; 0 deletes at once.
func deleteGrace(tc *config.TopicConfig) time.Duration {
	return time.Duration(tc.Int64(config.RemoteDeleteGraceMs)) * time.Millisecond
}

// removeSegment takes one remote segment out of a led partition's remote log
// for reason: a CopyFinished one into quarantine when the topic's grace is
// above zero (the entry first, then the record goes; the objects stay),
// anything else (or with no grace) deleted at once (deleteRemote).
func (m *Manager) removeSegment(ctx context.Context, t target, rec controlplane.RemoteSegment, reason controlplane.QuarantineReason) error {
	grace := deleteGrace(t.rep.Config())
	if grace <= 0 || rec.State != controlplane.CopyFinished {
		return m.deleteRemote(ctx, t.epoch, rec)
	}
	now := m.now()
	seg := rec
	e := controlplane.QuarantineEntry{Topic: t.rep.Topic(), TopicID: t.id, Partition: rec.Partition, Reason: reason,
		Segment: &seg, QuarantinedAt: now, PurgeAfter: now.Add(grace)}
	if _, err := m.meta.QuarantineRemoteSegment(ctx, e, t.epoch); err != nil {
		return fmt.Errorf("tiering: quarantine segment %s: %w", rec.SegmentID, err)
	}
	m.stats.quarantined.Add(1)
	m.log.Info("remote segment quarantined", "topic", t.rep.Topic(), "partition", rec.Partition, "segment", rec.SegmentID,
		"base_offset", rec.BaseOffset, "end_offset", rec.EndOffset, "reason", reason, "purge_after", e.PurgeAfter)
	return nil
}

// orphanEntryID names the quarantine entry of an object no record
// references: "o" and 31 hex digits of its key's SHA-256.
func orphanEntryID(key string) string {
	h := sha256.Sum256([]byte(key))
	return "o" + hex.EncodeToString(h[:])[:31]
}

// topicOfKey returns the topic name in a segment object's key
// (<prefix>/<hash>/<topic>-<topicIdHex>/<partition>/<name>), "" when the
// key is not one.
func topicOfKey(key string, id controlplane.TopicID) string {
	dir := path.Base(path.Dir(path.Dir(key)))
	name, ok := strings.CutSuffix(dir, "-"+id.Hex())
	if !ok {
		return ""
	}
	return name
}

// removeObject takes one object that no record references out of the
// bucket: into quarantine with grace above zero, deleted at once otherwise.
func (m *Manager) removeObject(ctx context.Context, id controlplane.TopicID, p int32, key string,
	reason controlplane.QuarantineReason, grace time.Duration) error {
	if grace <= 0 {
		if err := m.bucket.Delete(ctx, key); err != nil {
			return fmt.Errorf("%w: delete %s: %w", ErrBucket, key, err)
		}
		return nil
	}
	now := m.now()
	_, err := m.meta.Quarantine(ctx, controlplane.QuarantineEntry{Topic: topicOfKey(key, id), TopicID: id, Partition: p,
		ID: orphanEntryID(key), Reason: reason, Objects: []string{key}, QuarantinedAt: now, PurgeAfter: now.Add(grace)})
	if err == nil {
		m.stats.quarantined.Add(1)
	}
	return err
}

// quarantinedObjects returns the set of quarantined object keys.
func (m *Manager) quarantinedObjects() map[string]bool {
	out := map[string]bool{}
	for _, k := range m.meta.QuarantinedObjects() {
		out[k] = true
	}
	return out
}

// purgeExpired purges the entries past their grace, and finishes purges a
// crash interrupted (the controller, every pass).
func (m *Manager) purgeExpired(ctx context.Context) {
	now := m.now()
	for _, e := range m.meta.QuarantineEntries() {
		if e.State != controlplane.Purging && now.Before(e.PurgeAfter) {
			continue
		}
		if e.State == controlplane.Purging && now.Sub(e.UpdatedAt) < time.Minute {
			continue // a purge under way (shale tier quarantine purge); finished here if it stopped
		}
		if e.State == controlplane.Restoring {
			if _, ok := m.cfg.Store.TopicByID(e.TopicID); ok {
				continue // its leader restores it or refuses
			}
			// The topic went while the restore waited: no leader will
			// ever answer it.
			e.State = controlplane.Quarantined
		}
		if err := m.purge(ctx, e); err != nil {
			if !m.bucketFailed(err) && !errors.Is(err, controlplane.ErrConflict) {
				m.log.Warn("purging a quarantine entry failed", "topic", e.Topic, "partition", e.Partition, "entry", e.ID, "err", err)
			}
			continue
		}
		m.log.Info("quarantine entry purged", "topic", e.Topic, "partition", e.Partition, "entry", e.ID, "reason", e.Reason)
	}
}

// purge deletes an entry's objects, then the entry, after claiming it
// (Purging, compare-and-set: a restore can no longer take it). A segment
// whose record is stored again (a restore finished, or a quarantine cut off
// before the record went) keeps its objects: only the entry goes.
func (m *Manager) purge(ctx context.Context, e controlplane.QuarantineEntry) error {
	var err error
	switch e.State {
	case controlplane.Restoring:
		return fmt.Errorf("%w: %s", ErrBeingRestored, e.ID)
	case controlplane.Quarantined:
		if e, err = m.meta.UpdateQuarantine(ctx, e, controlplane.Purging); err != nil {
			return err
		}
	}
	if e.Segment != nil {
		stored, err := m.meta.RemoteSegmentStored(ctx, e.TopicID, e.Partition, e.ID)
		if err != nil {
			return err
		}
		if stored {
			return m.meta.DeleteQuarantine(ctx, e)
		}
	}
	if err := m.deleteObjects(ctx, e.TopicID, e.Objects); err != nil {
		return err
	}
	if err := m.meta.DeleteQuarantine(ctx, e); err != nil {
		if !errors.Is(err, controlplane.ErrConflict) {
			return err
		}
		// Another purge of the same entry finished first: it is gone.
		if stored, serr := m.meta.QuarantineStored(ctx, e); serr != nil || stored {
			return err
		}
	}
	m.bucketOK()
	m.stats.purged.Add(1)
	return nil
}

// QuarantineSelector picks quarantine entries: those of Topic (by name;
// required), of Partition unless it is negative, with one of IDs unless
// IDs is empty.
type QuarantineSelector struct {
	Topic     string
	Partition int32
	IDs       []string
}

func (s QuarantineSelector) match(e controlplane.QuarantineEntry) bool {
	return e.Topic == s.Topic && (s.Partition < 0 || e.Partition == s.Partition) && (len(s.IDs) == 0 || slices.Contains(s.IDs, e.ID))
}

// Select returns the entries sel picks, from the cache.
func (m *Manager) Select(sel QuarantineSelector) []controlplane.QuarantineEntry {
	var out []controlplane.QuarantineEntry
	for _, e := range m.meta.QuarantineEntries() {
		if sel.match(e) {
			out = append(out, e)
		}
	}
	return out
}

// Purge purges the entries sel picks now, whatever their grace, and
// returns those purged. An entry being restored is refused
// (ErrBeingRestored); ErrNoSuchEntry when sel picks none.
func (m *Manager) Purge(ctx context.Context, sel QuarantineSelector) ([]controlplane.QuarantineEntry, error) {
	picked := m.Select(sel)
	if len(picked) == 0 {
		return nil, ErrNoSuchEntry
	}
	var done []controlplane.QuarantineEntry
	for _, e := range picked {
		if err := m.purge(ctx, e); err != nil {
			return done, fmt.Errorf("purge %s-%d %s: %w", e.Topic, e.Partition, e.ID, err)
		}
		done = append(done, e)
	}
	return done, nil
}

// RequestRestore marks the entries sel picks Restoring and returns them:
// the partition leader's next tiering pass puts their segments back into
// the remote log, or refuses and marks them Quarantined again with a Note
// (retention would delete them again at once, they would leave a gap, or
// they overlap retained segments). ErrNotRestorable for an orphan object or
// a deleted topic's entry, ErrNoSuchEntry when sel picks none.
func (m *Manager) RequestRestore(ctx context.Context, sel QuarantineSelector) ([]controlplane.QuarantineEntry, error) {
	picked := m.Select(sel)
	if len(picked) == 0 {
		return nil, ErrNoSuchEntry
	}
	for _, e := range picked {
		top, ok := m.cfg.Store.Topic(e.Topic)
		switch {
		case e.Segment == nil:
			return nil, fmt.Errorf("%w: %s is an object no segment record listed", ErrNotRestorable, e.ID)
		case !ok || top.ID != e.TopicID:
			return nil, fmt.Errorf("%w: topic %s (id %s) was deleted", ErrNotRestorable, e.Topic, e.TopicID.Hex())
		case e.State == controlplane.Purging:
			return nil, fmt.Errorf("%w: %s is being purged", ErrNotRestorable, e.ID)
		}
	}
	// One request id, and each partition's count: the leader waits until
	// all its entries are marked (a re-run request marks them again).
	request := controlplane.NewSegmentID()
	size := map[string]int{}
	for _, e := range picked {
		size[fmt.Sprint(e.TopicID.Hex(), e.Partition)]++
	}
	var out []controlplane.QuarantineEntry
	for _, e := range picked {
		e.Note, e.Request, e.RequestSize = "", request, size[fmt.Sprint(e.TopicID.Hex(), e.Partition)]
		r, err := m.meta.UpdateQuarantine(ctx, e, controlplane.Restoring)
		if err != nil {
			return out, fmt.Errorf("restore %s-%d %s: %w", e.Topic, e.Partition, e.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// partKey names a partition by its topic's id.
type partKey struct {
	id controlplane.TopicID
	p  int32
}

// restoreRequests is the entries in Restoring, by partition: read once a
// pass, not once for each led partition.
func (m *Manager) restoreRequests() map[partKey][]controlplane.QuarantineEntry {
	out := map[partKey][]controlplane.QuarantineEntry{}
	for _, e := range m.meta.QuarantineEntries() {
		if e.State == controlplane.Restoring && e.Segment != nil {
			k := partKey{e.TopicID, e.Partition}
			out[k] = append(out[k], e)
		}
	}
	return out
}

// restoreRequested completes the restores requested for a led partition
// (its entries in Restoring, entries), in one piece: all come back, or
// none, each marked Quarantined again with the reason.
func (m *Manager) restoreRequested(ctx context.Context, t target, entries []controlplane.QuarantineEntry, logger partLogger) {
	p := t.rep.Partition()
	requests := map[string][]controlplane.QuarantineEntry{}
	for _, e := range entries {
		requests[e.Request] = append(requests[e.Request], e)
	}
	var want []controlplane.QuarantineEntry
	for _, es := range requests {
		if len(es) >= es[0].RequestSize { // all marked (a request still marking waits)
			want = append(want, es...)
		}
	}
	if len(want) == 0 {
		return
	}
	remote := m.meta.ListRemoteSegments(t.id, p)
	var segs []controlplane.RemoteSegment
	for _, e := range want {
		if !slices.ContainsFunc(remote, func(r controlplane.RemoteSegment) bool { return r.SegmentID == e.ID }) {
			segs = append(segs, *e.Segment)
		}
	}
	tc := t.rep.Config()
	recorded := m.recordedStart(t.id, p)
	if why := RestoreRefusal(segs, remote, t.rep.Log().Segments(), recorded, m.now(), tc.Int64(config.RetentionMs),
		tc.Int64(config.RetentionBytes)); why != "" {
		logger.Warn("quarantine restore refused", "why", why)
		for _, e := range want {
			e.Note = why
			if _, err := m.meta.UpdateQuarantine(ctx, e, controlplane.Quarantined); err != nil {
				logger.Warn("marking a refused restore failed", "entry", e.ID, "err", err)
			}
		}
		return
	}
	if len(segs) > 0 {
		lo := segs[0].BaseOffset
		for _, s := range segs {
			lo = min(lo, s.BaseOffset)
		}
		// The log start first: a segment restored below a recorded start
		// would be quarantined again by the next pass (BelowLogStart).
		if recorded > lo {
			if err := m.meta.LowerLogStart(ctx, t.id, p, lo, t.epoch); err != nil {
				logger.Warn("quarantine restore: moving the log start back failed", "log_start", lo, "err", err)
				return
			}
		}
	}
	for _, e := range want {
		seg := *e.Segment
		seg.LeaderEpoch = max(seg.LeaderEpoch, t.epoch)
		if _, err := m.meta.RestoreRemoteSegment(ctx, seg); err != nil && !errors.Is(err, controlplane.ErrConflict) {
			logger.Warn("quarantine restore failed", "entry", e.ID, "err", err)
			return
		}
		if err := m.meta.DeleteQuarantine(ctx, e); err != nil {
			logger.Warn("quarantine restore: removing the entry failed", "entry", e.ID, "err", err)
			return
		}
		m.stats.restored.Add(1)
		logger.Info("quarantined segment restored", "segment", e.ID, "base_offset", seg.BaseOffset, "end_offset", seg.EndOffset)
	}
}

// RestoreRefusal says why restoring segs (quarantined segments, not in
// remote) into a partition's remote log would be wrong, or "" when it is
// right. remote and local are the partition's remote records and local
// segments, recorded the log start DeleteRecords recorded (-1: none). The
// restored segments must overlap no retained remote segment nor each
// other, leave no gap up to the partition's retained data (the first
// remote segment, else the first local one), and survive retention as it
// stands, with the log start moved back to their first offset: otherwise
// the next pass would quarantine them again.
func RestoreRefusal(segs, remote []controlplane.RemoteSegment, local []segment.SegmentInfo, recorded int64, now time.Time,
	retentionMs, retentionBytes int64) string {
	if len(segs) == 0 {
		return ""
	}
	var finished []controlplane.RemoteSegment
	for _, r := range remote {
		if r.State == controlplane.CopyFinished {
			finished = append(finished, r)
		}
	}
	segs = slices.Clone(segs)
	slices.SortFunc(segs, func(a, b controlplane.RemoteSegment) int { return cmp.Compare(a.BaseOffset, b.BaseOffset) })
	for i, s := range segs {
		if overlapsAny(finished, s.BaseOffset, s.EndOffset) {
			return fmt.Sprintf("segment %s [%d, %d] overlaps retained remote segments", s.SegmentID, s.BaseOffset, s.EndOffset)
		}
		if i > 0 && segs[i-1].EndOffset >= s.BaseOffset {
			return fmt.Sprintf("segments %s and %s overlap", segs[i-1].SegmentID, s.SegmentID)
		}
	}
	lo := segs[0].BaseOffset
	merged := append(slices.Clone(finished), segs...)
	slices.SortFunc(merged, func(a, b controlplane.RemoteSegment) int { return cmp.Compare(a.BaseOffset, b.BaseOffset) })
	next := segs[len(segs)-1].EndOffset + 1 // where the retained data must go on
	switch {
	case len(finished) > 0:
		next = max(next, finished[0].BaseOffset)
	case len(local) > 0:
		next = max(next, local[0].BaseOffset)
	}
	if !Covered(merged, lo, next-1, nil) {
		return fmt.Sprintf("offsets from %d to %d would be in no segment (restore the entries that held them too, if not purged)", lo, next-1)
	}
	start := recorded
	if start > lo {
		start = lo
	}
	restored := map[string]bool{}
	for _, s := range segs {
		restored[s.SegmentID] = true
	}
	for _, r := range append(BelowLogStart(merged, start), RemoteRetentionPlan(merged, local, now, retentionMs, retentionBytes)...) {
		if restored[r.SegmentID] {
			return fmt.Sprintf("retention.ms/retention.bytes would delete segment %s [%d, %d] again at once: raise them first",
				r.SegmentID, r.BaseOffset, r.EndOffset)
		}
	}
	return ""
}
