package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// logStartKeyPrefix starts the key of a partition's log start record in
// shale_remote_segments ("_start.<topic id hex>.<partition>").
const logStartKeyPrefix = "_start."

// logStartRecord is the stored form of a partition's log start: the offset
// DeleteRecords moved it to. Field names are part of the stored format.
type logStartRecord struct {
	LogStart    int64     `json:"log_start"`
	LeaderEpoch int32     `json:"leader_epoch"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func logStartKey(id TopicID, p int32) string { return logStartKeyPrefix + partitionKey(id, p) }

// RaiseLogStart records that the partition's log start moved up to start
// (DeleteRecords on a tiered topic): remote data below it is deleted on
// purpose, cold reads and ListOffsets EARLIEST start there, and remote
// retention removes the segments that lie wholly below it. The record only
// moves up (a lower start is a no-op) and is fenced by leader epoch like a
// segment write (ErrFenced). Concurrent writers retry on ErrConflict.
func (rl *RemoteLog) RaiseLogStart(ctx context.Context, id TopicID, p int32, start int64, leaderEpoch int32) error {
	return rl.moveLogStart(ctx, id, p, start, leaderEpoch, true)
}

// moveLogStart is RaiseLogStart (up) and LowerLogStart (!up): it sets the
// partition's log start record to start by compare-and-set unless the
// record is already at or past start in that direction. With no record,
// raising creates one and lowering leaves none.
func (rl *RemoteLog) moveLogStart(ctx context.Context, id TopicID, p int32, start int64, leaderEpoch int32, up bool) error {
	if err := rl.store.checkOpen(); err != nil {
		return err
	}
	if err := rl.fence(ctx, RemoteSegment{TopicID: id, Partition: p, LeaderEpoch: leaderEpoch}); err != nil {
		return err
	}
	key := logStartKey(id, p)
	data := mustJSON(logStartRecord{LogStart: start, LeaderEpoch: leaderEpoch, UpdatedAt: time.Now().UTC()})
	for range 5 {
		cur, err := rl.kv.Get(ctx, key)
		var rev uint64
		switch {
		case isKeyGone(err) && !up:
			return nil
		case isKeyGone(err):
			rev, err = rl.kv.Create(ctx, key, data)
		case err != nil:
			return fmt.Errorf("controlplane: read log start %s: %w", key, err)
		default:
			var old logStartRecord
			if err := json.Unmarshal(cur.Value(), &old); err != nil {
				return fmt.Errorf("controlplane: decode log start %s: %w", key, err)
			}
			if up && old.LogStart >= start || !up && old.LogStart <= start {
				rl.apply(change{key: key, rev: cur.Revision(), value: cur.Value()})
				return nil
			}
			rev, err = rl.kv.Update(ctx, key, data, cur.Revision())
		}
		if err != nil {
			if isWrongLastSeq(err) {
				continue // another writer got there: read again
			}
			return fmt.Errorf("controlplane: write log start %s: %w", key, err)
		}
		rl.apply(change{key: key, rev: rev, value: data})
		return nil
	}
	return fmt.Errorf("%w: log start %s kept changing", ErrConflict, key)
}

// RemoteLogStart returns the log start DeleteRecords recorded for the
// partition (RaiseLogStart), from the cache; ok is false when there is none.
func (rl *RemoteLog) RemoteLogStart(id TopicID, p int32) (int64, bool) {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	e := rl.mu.starts[partID{id, p}]
	if e == nil || e.deleted {
		return 0, false
	}
	return e.val, true
}

// DeleteRemoteLogStart removes a partition's log start record (the cleanup
// of a deleted topic).
func (rl *RemoteLog) DeleteRemoteLogStart(ctx context.Context, id TopicID, p int32) error {
	key := logStartKey(id, p)
	if err := rl.kv.Delete(ctx, key); err != nil {
		return fmt.Errorf("controlplane: delete log start %s: %w", key, err)
	}
	rl.mu.Lock()
	if e := rl.mu.starts[partID{id, p}]; e != nil {
		e.deleted = true
		rl.changedLocked(id, p)
	}
	rl.mu.Unlock()
	return nil
}

// applyLogStart is apply for a "_start." key.
func (rl *RemoteLog) applyLogStart(ch change) {
	id, p, err := parsePartitionKey(strings.TrimPrefix(ch.key, logStartKeyPrefix))
	if err != nil {
		rl.log.Warn("ignoring log start key", "key", ch.key, "err", err)
		return
	}
	var r logStartRecord
	if !ch.deleted {
		if err := json.Unmarshal(ch.value, &r); err != nil {
			rl.log.Warn("ignoring log start value", "key", ch.key, "err", err)
			return
		}
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	pk := partID{id, p}
	if cur := rl.mu.starts[pk]; cur != nil && ch.rev <= cur.rev {
		return
	}
	rl.mu.starts[pk] = &entry[int64]{val: r.LogStart, rev: ch.rev, deleted: ch.deleted}
	rl.changedLocked(id, p)
}

// LogStartPartitions returns the partitions that have a log start record,
// by topic id, partitions ascending, from the cache (the controller's
// cleanup of deleted topics reads it: a topic whose segments are all gone
// may still have one). The caller owns the result.
func (rl *RemoteLog) LogStartPartitions() map[TopicID][]int32 {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	out := map[TopicID][]int32{}
	for pk, e := range rl.mu.starts {
		if !e.deleted {
			out[pk.id] = append(out[pk.id], pk.p)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// LowerLogStart moves the partition's recorded log start down to start (a
// restore from quarantine brings back segments below it); a record already
// at or below start, or none, is left as it is. Fenced by leader epoch like
// RaiseLogStart. Only the restore of quarantined segments calls it:
// nothing else ever moves a log start back.
func (rl *RemoteLog) LowerLogStart(ctx context.Context, id TopicID, p int32, start int64, leaderEpoch int32) error {
	return rl.moveLogStart(ctx, id, p, start, leaderEpoch, false)
}
