package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// remoteSegmentRecord is the stored JSON form of a RemoteSegment; field names
// are part of the stored format.
type remoteSegmentRecord struct {
	TopicID       string       `json:"topic_id"`
	Partition     int32        `json:"partition"`
	SegmentID     string       `json:"segment_id"`
	BaseOffset    int64        `json:"base_offset"`
	EndOffset     int64        `json:"end_offset"`
	MaxTimestamp  int64        `json:"max_timestamp"`
	Size          int64        `json:"size"`
	LeaderEpoch   int32        `json:"leader_epoch"`
	SegmentEpochs []EpochEntry `json:"segment_epochs"`
	// Object bounds of a record that covers a prefix of its objects (a
	// fork's); absent otherwise.
	ObjectEndOffset int64     `json:"object_end_offset,omitempty"`
	ObjectSize      int64     `json:"object_size,omitempty"`
	State           string    `json:"state"`
	Objects         []string  `json:"objects,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func encodeRemoteSegment(s RemoteSegment) []byte { return mustJSON(recordOf(s)) }

func recordOf(s RemoteSegment) remoteSegmentRecord {
	return remoteSegmentRecord{TopicID: s.TopicID.Hex(), Partition: s.Partition, SegmentID: s.SegmentID,
		BaseOffset: s.BaseOffset, EndOffset: s.EndOffset, MaxTimestamp: s.MaxTimestamp, Size: s.Size,
		LeaderEpoch: s.LeaderEpoch, SegmentEpochs: s.SegmentEpochs, ObjectEndOffset: s.ObjectEndOffset, ObjectSize: s.ObjectSize,
		State: s.State.String(), Objects: s.Objects,
		UpdatedAt: s.UpdatedAt.UTC()}
}

func decodeRemoteSegment(b []byte, rev uint64) (RemoteSegment, error) {
	var r remoteSegmentRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return RemoteSegment{}, fmt.Errorf("controlplane: decode remote segment: %w", err)
	}
	return fromRecord(r, rev)
}

func fromRecord(r remoteSegmentRecord, rev uint64) (RemoteSegment, error) {
	id, err := ParseTopicID(r.TopicID)
	if err != nil {
		return RemoteSegment{}, err
	}
	var state RemoteSegmentState
	for s := CopyStarted; s <= DeleteFinished; s++ {
		if s.String() == r.State {
			state = s
		}
	}
	if state == 0 {
		return RemoteSegment{}, fmt.Errorf("controlplane: decode remote segment: state %q", r.State)
	}
	return RemoteSegment{TopicID: id, Partition: r.Partition, SegmentID: r.SegmentID, BaseOffset: r.BaseOffset,
		EndOffset: r.EndOffset, MaxTimestamp: r.MaxTimestamp, Size: r.Size, LeaderEpoch: r.LeaderEpoch,
		SegmentEpochs: r.SegmentEpochs, ObjectEndOffset: r.ObjectEndOffset, ObjectSize: r.ObjectSize, State: state,
		Objects: r.Objects, UpdatedAt: r.UpdatedAt, Revision: rev}, nil
}

func validateRemoteSegment(s RemoteSegment) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s-%d segment %q: %s", ErrInvalidRemoteSegment, s.TopicID.Hex(), s.Partition, s.SegmentID, why)
	}
	switch {
	case s.TopicID.IsZero():
		return bad("no topic id")
	case s.Partition < 0:
		return bad("negative partition")
	case s.SegmentID == "" || strings.ContainsAny(s.SegmentID, ".-/*> "):
		return bad("segment id must be non-empty without '.', '-', '/', '*', '>' or spaces")
	case s.BaseOffset < 0 || s.EndOffset < s.BaseOffset:
		return bad(fmt.Sprintf("offsets [%d, %d]", s.BaseOffset, s.EndOffset))
	case s.State < CopyStarted || s.State > DeleteFinished:
		return bad("state " + s.State.String())
	case s.ObjectSize != 0 && (s.ObjectSize < s.Size || s.ObjectEndOffset < s.EndOffset):
		return bad(fmt.Sprintf("object bounds (end %d, %d bytes) below the record's (end %d, %d bytes)",
			s.ObjectEndOffset, s.ObjectSize, s.EndOffset, s.Size))
	}
	return nil
}

// PutRemoteSegment writes seg as the record of its segment, stamped with
// UpdatedAt = now, and returns it as written with its new Revision.
//
// expectRevision 0 creates the record, which must be in CopyStarted; any
// other value updates the record stored at exactly that revision (ErrConflict
// otherwise: re-read and decide again), and the state change must be legal
// (see RemoteSegmentState) with the segment's id and offsets unchanged
// (ErrInvalidRemoteSegment). The write is fenced: ErrFenced when
// seg.LeaderEpoch is below the partition's current leader epoch in
// shale_partitions, or the partition does not exist.
func (rl *RemoteLog) PutRemoteSegment(ctx context.Context, seg RemoteSegment, expectRevision uint64) (RemoteSegment, error) {
	if err := rl.store.checkOpen(); err != nil {
		return RemoteSegment{}, err
	}
	if err := validateRemoteSegment(seg); err != nil {
		return RemoteSegment{}, err
	}
	if err := rl.fence(ctx, seg); err != nil {
		return RemoteSegment{}, err
	}
	key := remoteSegmentKey(seg.TopicID, seg.Partition, seg.SegmentID)
	var from RemoteSegmentState
	if expectRevision != 0 {
		cur, err := rl.kv.Get(ctx, key)
		switch {
		case isKeyGone(err):
			return RemoteSegment{}, fmt.Errorf("%w: remote segment %s is gone", ErrConflict, key)
		case err != nil:
			return RemoteSegment{}, fmt.Errorf("controlplane: read remote segment %s: %w", key, err)
		case cur.Revision() != expectRevision:
			return RemoteSegment{}, fmt.Errorf("%w: remote segment %s at revision %d, not %d", ErrConflict, key, cur.Revision(), expectRevision)
		}
		old, err := decodeRemoteSegment(cur.Value(), cur.Revision())
		if err != nil {
			return RemoteSegment{}, err
		}
		if old.BaseOffset != seg.BaseOffset || old.EndOffset != seg.EndOffset {
			return RemoteSegment{}, fmt.Errorf("%w: %s: offsets [%d, %d] would change to [%d, %d]", ErrInvalidRemoteSegment,
				key, old.BaseOffset, old.EndOffset, seg.BaseOffset, seg.EndOffset)
		}
		from = old.State
	}
	if !validTransition(from, seg.State) {
		return RemoteSegment{}, fmt.Errorf("%w: %s: %v -> %v", ErrInvalidRemoteSegment, key, from, seg.State)
	}
	seg = seg.clone()
	seg.UpdatedAt = time.Now()
	data := encodeRemoteSegment(seg)
	var rev uint64
	var err error
	if expectRevision == 0 {
		rev, err = rl.kv.Create(ctx, key, data)
	} else {
		rev, err = rl.kv.Update(ctx, key, data, expectRevision)
	}
	if err != nil {
		if isWrongLastSeq(err) {
			return RemoteSegment{}, fmt.Errorf("%w: remote segment %s at revision %d: %w", ErrConflict, key, expectRevision, err)
		}
		return RemoteSegment{}, fmt.Errorf("controlplane: write remote segment %s: %w", key, err)
	}
	seg.Revision = rev
	rl.apply(change{key: key, rev: rev, value: data})
	return seg, nil
}

// fence refuses a write from an epoch older than the partition's current one.
func (rl *RemoteLog) fence(ctx context.Context, seg RemoteSegment) error {
	e, err := rl.store.partsKV.Get(ctx, partitionKey(seg.TopicID, seg.Partition))
	if isKeyGone(err) {
		return fmt.Errorf("%w: partition %s-%d does not exist", ErrFenced, seg.TopicID.Hex(), seg.Partition)
	}
	if err != nil {
		return fmt.Errorf("controlplane: read partition %s-%d for fencing: %w", seg.TopicID.Hex(), seg.Partition, err)
	}
	st, err := decodePartition(e.Value(), e.Revision())
	if err != nil {
		return err
	}
	if seg.LeaderEpoch < st.LeaderEpoch {
		return fmt.Errorf("%w: %s-%d write at leader epoch %d, current %d", ErrFenced, st.Topic, st.Partition,
			seg.LeaderEpoch, st.LeaderEpoch)
	}
	return nil
}

// DeleteRemoteSegmentRecord removes seg's record if it is still at
// seg.Revision (ErrConflict otherwise). It is not fenced: it serves both the
// end of a delete (after DeleteFinished) and the cleanup of a deleted topic,
// whose partition state is gone. The caller must have deleted the segment's
// objects first, so that no object outlives its record.
func (rl *RemoteLog) DeleteRemoteSegmentRecord(ctx context.Context, seg RemoteSegment) error {
	if err := rl.store.checkOpen(); err != nil {
		return err
	}
	key := remoteSegmentKey(seg.TopicID, seg.Partition, seg.SegmentID)
	rev, err := kvDelete(ctx, rl.store.js, BucketRemoteSegments, key, seg.Revision)
	if err != nil {
		return err
	}
	rl.apply(change{key: key, rev: rev, deleted: true})
	return nil
}
