package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The control-plane side of a restore from the bucket (package restore):
// a topic comes back under its old id, so that the bucket's keys, which
// carry the id, and the restored metadata agree. The order is what makes
// it safe:
//
//  1. CreateRestoredTopic writes the partition states leaderless, with
//     an empty ISR and no ELR, at leader epoch 0, then the topic. No
//     broker leads such a partition (the controller elects only from the
//     ISR and the ELR, or uncleanly, which the restore turns off for the
//     topic until step 3), so no leader starts an empty log at offset 0
//     and no tiering pass runs the orphan sweep over the partition's
//     prefix while its records are missing.
//  2. RecreateRemoteSegment writes each remote segment record straight as
//     COPY_SEGMENT_FINISHED (fenced as every write).
//  3. ActivateRestoredPartition names a leader and the ISR at a leader
//     epoch above every epoch in the restored data. The leader, whose log
//     is empty, restarts it from the remote tail before it leads
//     (replica.Manager), reading the records fresh from NATS
//     (FreshRemoteSegments), not from its watch.

// ErrRestore: a restore step refused (a topic of that name exists with
// another id, a partition already active).
var ErrRestore = errors.New("controlplane: restore refused")

// CreateRestoredTopic creates the topic t.Name with the id t.ID, t.Partitions
// partitions of t.ReplicationFactor replicas assigned over the live brokers
// (at most as many as are live), and t.Configs, every partition
// leaderless with an empty ISR (step 1 above). A topic of that name with
// the same id is returned as it is (a restore run again); with another id
// it is ErrTopicExists.
func (s *Store) CreateRestoredTopic(ctx context.Context, t Topic) (Topic, error) {
	if err := s.checkOpen(); err != nil {
		return Topic{}, err
	}
	if err := ValidateTopicName(t.Name); err != nil {
		return Topic{}, err
	}
	if t.ID.IsZero() || t.Partitions < 1 {
		return Topic{}, fmt.Errorf("%w: %q: id %s, %d partitions", ErrRestore, t.Name, t.ID.Hex(), t.Partitions)
	}
	if cur, _, err := s.freshTopic(ctx, t.Name); err == nil {
		if cur.ID != t.ID {
			return Topic{}, fmt.Errorf("%w: %q with another topic id (%s)", ErrTopicExists, t.Name, cur.ID.Hex())
		}
		return cur, nil
	} else if !errors.Is(err, ErrUnknownTopic) {
		return Topic{}, err
	}
	brokers := s.Brokers()
	if len(brokers) == 0 {
		return Topic{}, fmt.Errorf("%w: no live broker", ErrRestore)
	}
	rf := min(max(t.ReplicationFactor, 1), int16(len(brokers)))
	t = Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions, ReplicationFactor: rf,
		Configs: maps.Clone(t.Configs), Internal: isInternalTopic(t.Name)}
	assignment := AssignReplicas(brokers, t.Partitions, rf, rand.IntN(len(brokers)))
	for p, replicas := range assignment {
		st := PartitionState{TopicID: t.ID, Topic: t.Name, Partition: int32(p), Replicas: replicas, Leader: -1}
		key := partitionKey(t.ID, int32(p))
		data := encodePartition(st)
		rev, err := s.partsKV.Create(ctx, key, data)
		if err != nil && !isWrongLastSeq(err) { // an existing one: a restore run again
			return Topic{}, fmt.Errorf("controlplane: create restored partition %d of %q: %w", p, t.Name, err)
		}
		if err == nil {
			s.apply((*cache).applyPartition, decodeAhead(change{key: key, rev: rev, value: data}))
		}
	}
	data := encodeTopic(t)
	rev, err := s.topicsKV.Create(ctx, topicKey(t.Name), data)
	if err != nil {
		if isWrongLastSeq(err) {
			return Topic{}, fmt.Errorf("%w: %q", ErrTopicExists, t.Name)
		}
		return Topic{}, fmt.Errorf("controlplane: create restored topic %q: %w", t.Name, err)
	}
	s.apply((*cache).applyTopic, change{key: topicKey(t.Name), rev: rev, value: data})
	return t.clone(), nil
}

// ActivateRestoredPartition makes a restored partition live (step 3 above):
// its live replicas become the ISR, the first of them the leader, at
// leader epoch epoch (raised to the stored one if that is higher). A
// partition that already has a leader is left alone (a restore run again).
// ErrRestore when no replica is live.
func (s *Store) ActivateRestoredPartition(ctx context.Context, id TopicID, p int32, epoch int32) (PartitionState, error) {
	if err := s.checkOpen(); err != nil {
		return PartitionState{}, err
	}
	for range maxCASRetries {
		e, err := s.partsKV.Get(ctx, partitionKey(id, p))
		if err != nil {
			return PartitionState{}, fmt.Errorf("controlplane: read restored partition %s-%d: %w", id.Hex(), p, err)
		}
		st, err := decodePartition(e.Value(), e.Revision())
		if err != nil {
			return PartitionState{}, err
		}
		if st.Leader >= 0 {
			return st, nil
		}
		live := liveIn(s.Brokers())
		isr := slices.DeleteFunc(slices.Clone(st.Replicas), func(b int32) bool { return !live(b) })
		if len(isr) == 0 {
			return PartitionState{}, fmt.Errorf("%w: %s-%d: none of the replicas %v is live", ErrRestore, st.Topic, p, st.Replicas)
		}
		st.Leader, st.ISR, st.ELR, st.LeaderEpoch = isr[0], isr, nil, max(epoch, st.LeaderEpoch)
		st, err = s.UpdatePartition(ctx, st)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return st, err
	}
	return PartitionState{}, fmt.Errorf("%w: activate %s-%d: too many concurrent changes", ErrConflict, id.Hex(), p)
}

// RecreateRemoteSegment writes seg's record as COPY_SEGMENT_FINISHED
// straight away (step 2 above): its objects are in the bucket already.
// Fenced as PutRemoteSegment. A record that exists already (a restore run
// again) is returned as stored.
func (rl *RemoteLog) RecreateRemoteSegment(ctx context.Context, seg RemoteSegment) (RemoteSegment, error) {
	if err := rl.store.checkOpen(); err != nil {
		return RemoteSegment{}, err
	}
	seg = seg.clone()
	seg.State = CopyFinished
	if err := validateRemoteSegment(seg); err != nil {
		return RemoteSegment{}, err
	}
	if err := rl.fence(ctx, seg); err != nil {
		return RemoteSegment{}, err
	}
	key := remoteSegmentKey(seg.TopicID, seg.Partition, seg.SegmentID)
	seg.UpdatedAt = time.Now()
	data := encodeRemoteSegment(seg)
	rev, err := rl.kv.Create(ctx, key, data)
	if isWrongLastSeq(err) {
		cur, gerr := rl.kv.Get(ctx, key)
		if gerr != nil {
			return RemoteSegment{}, fmt.Errorf("controlplane: read remote segment %s: %w", key, gerr)
		}
		return decodeRemoteSegment(cur.Value(), cur.Revision())
	}
	if err != nil {
		return RemoteSegment{}, fmt.Errorf("controlplane: write remote segment %s: %w", key, err)
	}
	seg.Revision = rev
	rl.apply(change{key: key, rev: rev, value: data})
	return seg, nil
}

// FreshRemoteSegments reads the partition's records from NATS, not from
// the watch's cache, sorted as ListRemoteSegments: for a decision that
// must see every record written before it (a leader restarting an empty
// log from the remote tail right after a restore wrote the records).
func (rl *RemoteLog) FreshRemoteSegments(ctx context.Context, id TopicID, p int32) ([]RemoteSegment, error) {
	if err := rl.store.checkOpen(); err != nil {
		return nil, err
	}
	prefix := partitionKey(id, p) + "."
	lister, err := rl.kv.ListKeysFiltered(ctx, prefix+"*")
	if err != nil {
		if isKeyGone(err) || strings.Contains(err.Error(), "no keys found") {
			return nil, nil
		}
		return nil, fmt.Errorf("controlplane: list remote segments of %s-%d: %w", id.Hex(), p, err)
	}
	defer lister.Stop()
	var out []RemoteSegment
	for key := range lister.Keys() {
		e, err := rl.kv.Get(ctx, key)
		if isKeyGone(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("controlplane: read remote segment %s: %w", key, err)
		}
		seg, err := decodeRemoteSegment(e.Value(), e.Revision())
		if err != nil {
			return nil, err
		}
		out = append(out, seg)
	}
	slices.SortFunc(out, compareRemoteSegments)
	return out, nil
}
