package controlplane

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// quarantineKeyPrefix starts the key of a quarantine entry in
// shale_remote_segments ("_q.<topic id hex>.<partition>.<entry id>").
const quarantineKeyPrefix = "_q."

// QuarantineReason says which remote delete put an entry in quarantine.
type QuarantineReason string

// Reasons.
const (
	// ReasonRetention: retention.ms or retention.bytes.
	ReasonRetention QuarantineReason = "retention"
	// ReasonDeleteRecords: the segment lay wholly below the log start
	// DeleteRecords recorded.
	ReasonDeleteRecords QuarantineReason = "delete_records"
	// ReasonTopicDeleted: the topic was deleted.
	ReasonTopicDeleted QuarantineReason = "topic_deleted"
	// ReasonOrphanCopy: a copy outside the leader-epoch lineage whose offsets
	// the lineage's copies hold.
	ReasonOrphanCopy QuarantineReason = "orphan_copy"
	// ReasonOrphanObject: an object that no record referenced (no segment
	// metadata: it can be purged, not restored).
	ReasonOrphanObject QuarantineReason = "orphan_object"
)

// QuarantineState is where an entry is in its life: Quarantined until it is
// restored or purged; Restoring and Purging while one of those runs (a
// compare-and-set on the entry claims it, so a restore and a purge never
// both act on one entry).
type QuarantineState string

// States.
const (
	Quarantined QuarantineState = "quarantined"
	Restoring   QuarantineState = "restoring"
	Purging     QuarantineState = "purging"
)

// QuarantineEntry is one quarantined remote delete: the objects of one
// segment (with the segment's metadata as it was committed) or one object
// no record referenced. Its objects stay in the bucket until PurgeAfter,
// listed here, so that the orphan checks count them as referenced.
type QuarantineEntry struct {
	Topic     string // the topic's name when it was quarantined
	TopicID   TopicID
	Partition int32
	// ID is the segment id, or for an orphan object "o" and 31 hex digits
	// of its key's hash.
	ID     string
	Reason QuarantineReason
	State  QuarantineState
	// Segment is the segment's record as it was (CopyFinished); nil for an
	// orphan object.
	Segment       *RemoteSegment
	Objects       []string
	QuarantinedAt time.Time
	// PurgeAfter is when the objects may go: QuarantinedAt plus the topic's
	// remote.delete.grace.ms at that time.
	PurgeAfter time.Time
	UpdatedAt  time.Time
	// Note says why the last restore was refused ("" when none was).
	Note string
	// Request and RequestSize tie the entries of one partition that one
	// restore request marked Restoring: the leader restores them once all
	// RequestSize are marked, together, never a part of them.
	Request     string
	RequestSize int
	// Revision is the KV revision the entry was read at or written as.
	Revision uint64
}

func (e QuarantineEntry) clone() QuarantineEntry {
	if e.Segment != nil {
		s := e.Segment.clone()
		e.Segment = &s
	}
	e.Objects = slices.Clone(e.Objects)
	return e
}

// quarantineRecord is the stored JSON form of a QuarantineEntry; field
// names are part of the stored format.
type quarantineRecord struct {
	Topic         string               `json:"topic"`
	TopicID       string               `json:"topic_id"`
	Partition     int32                `json:"partition"`
	ID            string               `json:"id"`
	Reason        string               `json:"reason"`
	State         string               `json:"state"`
	Segment       *remoteSegmentRecord `json:"segment,omitempty"`
	Objects       []string             `json:"objects"`
	QuarantinedAt time.Time            `json:"quarantined_at"`
	PurgeAfter    time.Time            `json:"purge_after"`
	UpdatedAt     time.Time            `json:"updated_at"`
	Note          string               `json:"note,omitempty"`
	Request       string               `json:"request,omitempty"`
	RequestSize   int                  `json:"request_size,omitempty"`
}

func quarantineKey(id TopicID, p int32, entryID string) string {
	return quarantineKeyPrefix + partitionKey(id, p) + "." + entryID
}

func encodeQuarantine(e QuarantineEntry) []byte {
	r := quarantineRecord{Topic: e.Topic, TopicID: e.TopicID.Hex(), Partition: e.Partition, ID: e.ID,
		Reason: string(e.Reason), State: string(e.State), Objects: e.Objects, QuarantinedAt: e.QuarantinedAt.UTC(),
		PurgeAfter: e.PurgeAfter.UTC(), UpdatedAt: e.UpdatedAt.UTC(), Note: e.Note,
		Request: e.Request, RequestSize: e.RequestSize}
	if e.Segment != nil {
		s := recordOf(*e.Segment)
		r.Segment = &s
	}
	return mustJSON(r)
}

// decodeQuarantine decodes a stored entry (bytes from the control plane).
func decodeQuarantine(b []byte, rev uint64) (QuarantineEntry, error) {
	var r quarantineRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return QuarantineEntry{}, fmt.Errorf("controlplane: decode quarantine entry: %w", err)
	}
	id, err := ParseTopicID(r.TopicID)
	if err != nil {
		return QuarantineEntry{}, err
	}
	e := QuarantineEntry{Topic: r.Topic, TopicID: id, Partition: r.Partition, ID: r.ID, Reason: QuarantineReason(r.Reason),
		State: QuarantineState(r.State), Objects: r.Objects, QuarantinedAt: r.QuarantinedAt, PurgeAfter: r.PurgeAfter,
		UpdatedAt: r.UpdatedAt, Note: r.Note, Request: r.Request, RequestSize: r.RequestSize, Revision: rev}
	switch e.State {
	case Quarantined, Restoring, Purging:
	default:
		return QuarantineEntry{}, fmt.Errorf("controlplane: decode quarantine entry: state %q", r.State)
	}
	if r.Segment != nil {
		s, err := fromRecord(*r.Segment, 0)
		if err != nil {
			return QuarantineEntry{}, err
		}
		e.Segment = &s
	}
	return e, nil
}

// QuarantineEntries returns every entry, from the cache, sorted by topic
// id, partition, base offset and id. The caller owns the result.
func (rl *RemoteLog) QuarantineEntries() []QuarantineEntry {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	out := appendLive(nil, rl.mu.quarantine, QuarantineEntry.clone)
	slices.SortFunc(out, func(a, b QuarantineEntry) int {
		return cmp.Or(strings.Compare(a.TopicID.Hex(), b.TopicID.Hex()), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.baseOffset(), b.baseOffset()), strings.Compare(a.ID, b.ID))
	})
	return out
}

// QuarantinedObjects returns the keys of every quarantined object, from the
// cache: objects that an orphan check must count as referenced.
func (rl *RemoteLog) QuarantinedObjects() []string {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	var out []string
	for _, e := range rl.mu.quarantine {
		if !e.deleted {
			out = append(out, e.val.Objects...)
		}
	}
	return out
}

func (e QuarantineEntry) baseOffset() int64 {
	if e.Segment == nil {
		return -1
	}
	return e.Segment.BaseOffset
}

// Quarantine records e (its state Quarantined) and returns it as written.
// An entry already stored under the same partition and id is returned as
// it is (a pass that stopped between the entry and the removal of the
// segment's record runs again). Not fenced: it only adds a reference.
func (rl *RemoteLog) Quarantine(ctx context.Context, e QuarantineEntry) (QuarantineEntry, error) {
	if err := rl.store.checkOpen(); err != nil {
		return QuarantineEntry{}, err
	}
	if e.TopicID.IsZero() || e.ID == "" || strings.ContainsAny(e.ID, ".-/*> ") || len(e.Objects) == 0 {
		return QuarantineEntry{}, fmt.Errorf("controlplane: invalid quarantine entry %q of %s-%d", e.ID, e.TopicID.Hex(), e.Partition)
	}
	key := quarantineKey(e.TopicID, e.Partition, e.ID)
	e = e.clone()
	e.State, e.UpdatedAt = Quarantined, time.Now()
	data := encodeQuarantine(e)
	rev, err := rl.kv.Create(ctx, key, data)
	if err != nil {
		if !isWrongLastSeq(err) {
			return QuarantineEntry{}, fmt.Errorf("controlplane: write quarantine entry %s: %w", key, err)
		}
		cur, gerr := rl.kv.Get(ctx, key)
		if gerr != nil {
			return QuarantineEntry{}, fmt.Errorf("controlplane: read quarantine entry %s: %w", key, gerr)
		}
		rl.apply(change{key: key, rev: cur.Revision(), value: cur.Value()})
		return decodeQuarantine(cur.Value(), cur.Revision())
	}
	e.Revision = rev
	rl.apply(change{key: key, rev: rev, value: data})
	return e, nil
}

// QuarantineRemoteSegment takes a CopyFinished segment out of the remote
// log into quarantine: its entry first (e, with e.Segment the record as
// read), then the record goes (compare-and-set on its revision). The
// objects stay. Fenced by leaderEpoch like PutRemoteSegment; a negative
// leaderEpoch skips the fence (the cleanup of a deleted topic, whose
// partition state is gone). A failure after the entry leaves entry and
// record both: the next pass finishes it, and a purge that finds the record
// still stored deletes only the entry.
func (rl *RemoteLog) QuarantineRemoteSegment(ctx context.Context, e QuarantineEntry, leaderEpoch int32) (QuarantineEntry, error) {
	if e.Segment == nil || e.Segment.State != CopyFinished {
		return QuarantineEntry{}, fmt.Errorf("%w: quarantine needs a CopyFinished segment", ErrInvalidRemoteSegment)
	}
	if leaderEpoch >= 0 {
		if err := rl.fence(ctx, RemoteSegment{TopicID: e.TopicID, Partition: e.Partition, LeaderEpoch: leaderEpoch}); err != nil {
			return QuarantineEntry{}, err
		}
	}
	e.ID, e.Objects = e.Segment.SegmentID, e.Segment.Objects
	q, err := rl.Quarantine(ctx, e)
	if err != nil {
		return QuarantineEntry{}, err
	}
	if err := rl.DeleteRemoteSegmentRecord(ctx, *e.Segment); err != nil {
		return QuarantineEntry{}, err
	}
	return q, nil
}

// UpdateQuarantine moves the entry stored at exactly e.Revision to state
// (ErrConflict when it changed or is gone: another node claimed it) and
// returns it as written.
func (rl *RemoteLog) UpdateQuarantine(ctx context.Context, e QuarantineEntry, state QuarantineState) (QuarantineEntry, error) {
	if err := rl.store.checkOpen(); err != nil {
		return QuarantineEntry{}, err
	}
	key := quarantineKey(e.TopicID, e.Partition, e.ID)
	e = e.clone()
	e.State, e.UpdatedAt = state, time.Now()
	data := encodeQuarantine(e)
	rev, err := rl.kv.Update(ctx, key, data, e.Revision)
	if err != nil {
		if isWrongLastSeq(err) || isKeyGone(err) {
			return QuarantineEntry{}, fmt.Errorf("%w: quarantine entry %s at revision %d: %w", ErrConflict, key, e.Revision, err)
		}
		return QuarantineEntry{}, fmt.Errorf("controlplane: write quarantine entry %s: %w", key, err)
	}
	e.Revision = rev
	rl.apply(change{key: key, rev: rev, value: data})
	return e, nil
}

// DeleteQuarantine removes the entry if it is still at e.Revision
// (ErrConflict otherwise). The caller has either deleted its objects
// (purge) or handed them to a segment record (restore).
func (rl *RemoteLog) DeleteQuarantine(ctx context.Context, e QuarantineEntry) error {
	if err := rl.store.checkOpen(); err != nil {
		return err
	}
	key := quarantineKey(e.TopicID, e.Partition, e.ID)
	rev, err := kvDelete(ctx, rl.store.js, BucketRemoteSegments, key, e.Revision)
	if err != nil {
		return err
	}
	rl.apply(change{key: key, rev: rev, deleted: true})
	return nil
}

// QuarantineStored reports whether e's entry exists in the KV bucket, read
// fresh (a purge that lost a race to another purge of the same entry).
func (rl *RemoteLog) QuarantineStored(ctx context.Context, e QuarantineEntry) (bool, error) {
	key := quarantineKey(e.TopicID, e.Partition, e.ID)
	_, err := rl.kv.Get(ctx, key)
	switch {
	case isKeyGone(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("controlplane: read quarantine entry %s: %w", key, err)
	}
	return true, nil
}

// RemoteSegmentStored reports whether the segment's record exists in the
// KV bucket, read fresh (not from the cache): a purge checks it before it
// deletes objects that a record may reference again.
func (rl *RemoteLog) RemoteSegmentStored(ctx context.Context, id TopicID, p int32, segID string) (bool, error) {
	_, err := rl.kv.Get(ctx, remoteSegmentKey(id, p, segID))
	switch {
	case isKeyGone(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("controlplane: read remote segment %s: %w", remoteSegmentKey(id, p, segID), err)
	}
	return true, nil
}

// RestoreRemoteSegment creates seg's record directly in CopyFinished (a
// quarantined segment brought back: its objects are all in the bucket) and
// returns it as written. Fenced like PutRemoteSegment: seg.LeaderEpoch must
// be at least the partition's current leader epoch. ErrConflict when a
// record with its id exists already.
func (rl *RemoteLog) RestoreRemoteSegment(ctx context.Context, seg RemoteSegment) (RemoteSegment, error) {
	if err := rl.store.checkOpen(); err != nil {
		return RemoteSegment{}, err
	}
	seg.State = CopyFinished
	if err := validateRemoteSegment(seg); err != nil {
		return RemoteSegment{}, err
	}
	if err := rl.fence(ctx, seg); err != nil {
		return RemoteSegment{}, err
	}
	key := remoteSegmentKey(seg.TopicID, seg.Partition, seg.SegmentID)
	seg = seg.clone()
	seg.UpdatedAt = time.Now()
	data := encodeRemoteSegment(seg)
	rev, err := rl.kv.Create(ctx, key, data)
	if err != nil {
		if isWrongLastSeq(err) {
			return RemoteSegment{}, fmt.Errorf("%w: remote segment %s exists: %w", ErrConflict, key, err)
		}
		return RemoteSegment{}, fmt.Errorf("controlplane: write remote segment %s: %w", key, err)
	}
	seg.Revision = rev
	rl.apply(change{key: key, rev: rev, value: data})
	return seg, nil
}

// applyQuarantine is apply for a "_q." key.
func (rl *RemoteLog) applyQuarantine(ch change) {
	rest := strings.TrimPrefix(ch.key, quarantineKeyPrefix)
	id, p, _, err := parseRemoteSegmentKey(rest)
	if err != nil {
		rl.log.Warn("ignoring quarantine key", "key", ch.key, "err", err)
		return
	}
	var e QuarantineEntry
	if !ch.deleted {
		if e, err = decodeQuarantine(ch.value, ch.rev); err != nil {
			rl.log.Warn("ignoring quarantine value", "key", ch.key, "err", err)
			return
		}
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	cur := rl.mu.quarantine[rest]
	if cur != nil && ch.rev <= cur.rev {
		return
	}
	if cur != nil && !cur.deleted {
		rl.refsAddLocked(cur.val.TopicID, quarantineKeys(cur.val), -1)
	}
	if !ch.deleted {
		rl.refsAddLocked(e.TopicID, quarantineKeys(e), 1)
	}
	rl.mu.quarantine[rest] = &entry[QuarantineEntry]{val: e, rev: ch.rev, deleted: ch.deleted}
	rl.changedLocked(id, p)
}
