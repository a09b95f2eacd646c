package controlplane

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Partition returns the state of partition p of the named topic from the
// cache.
func (s *Store) Partition(topic string, p int32) (PartitionState, bool) {
	st, ok := s.PartitionShared(topic, p)
	if !ok {
		return PartitionState{}, false
	}
	return st.clone(), true // the entry is never changed in place: cloned outside the lock
}

// PartitionShared is Partition without the deep copy: the state shares its
// slices with the cache, so the caller must only read them
// (PartitionsShared). For passes that look at every partition of the node
// each few seconds (the tiering loop).
func (s *Store) PartitionShared(topic string, p int32) (PartitionState, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.mu.c.liveTopic(topic)
	if !ok {
		return PartitionState{}, false
	}
	e := s.mu.c.partitions[t.val.ID][p]
	if e == nil || e.deleted {
		return PartitionState{}, false
	}
	return e.val, true
}

// Partitions returns the states of the named topic's partitions from the
// cache, sorted by partition; nil for an unknown topic. The caller owns the
// result.
func (s *Store) Partitions(topic string) []PartitionState {
	out := s.PartitionsShared(topic)
	// The cache's entries are never changed once stored (a change
	// replaces the entry), so the copies are made deep outside the lock:
	// at 10,000 partitions cloning under it held up every write the
	// controller's elections applied (issue 23).
	for i := range out {
		out[i] = out[i].clone()
	}
	return out
}

// PartitionsShared is Partitions without the deep copies: the states share
// their slices (replicas, ISR, ELR, ...) with the cache, which never changes
// a stored entry in place, so the caller must only read them. For readers of
// thousands of partitions that change nothing: a Metadata answer of a
// 10,000-partition topic cloned every state, and clients ask for it again
// and again while leaders move. Partitions copies its states under the lock
// this way, then deepens the copies outside it.
func (s *Store) PartitionsShared(topic string) []PartitionState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.mu.c.liveTopic(topic)
	if !ok {
		return nil
	}
	parts := s.mu.c.partitions[t.val.ID]
	live := 0
	for _, e := range parts {
		if !e.deleted {
			live++
		}
	}
	// A topic's partitions are numbered 0..n-1 (CreatePartitions only
	// adds): each goes to its own index, without sorting 10,000 states.
	out := make([]PartitionState, live)
	dense := true
	for p, e := range parts {
		if e.deleted {
			continue
		}
		if p < 0 || int(p) >= live || e.val.Partition != p {
			dense = false
			break
		}
		out[p] = e.val
	}
	if dense {
		return out
	}
	out = out[:0]
	for _, e := range parts {
		if !e.deleted {
			out = append(out, e.val)
		}
	}
	slices.SortFunc(out, func(a, b PartitionState) int { return cmp.Compare(a.Partition, b.Partition) })
	return out
}

// UpdatePartition writes st as the new state of partition (st.TopicID,
// st.Partition) if the stored state is still at st.Revision, with
// PartitionEpoch set to st.PartitionEpoch+1; st should be a state read from
// the store and then modified. It returns the state as written, with its new
// Revision. When another writer got there first (or the partition was
// deleted) it returns ErrConflict and writes nothing: re-read and decide
// again. ErrInvalidPartitionState when st has no revision, no replicas,
// duplicate replicas, an ISR member or leader (other than -1) outside the
// replicas, or adding and removing replicas that are not disjoint subsets of
// the replicas.
func (s *Store) UpdatePartition(ctx context.Context, st PartitionState) (PartitionState, error) {
	if err := s.checkOpen(); err != nil {
		return PartitionState{}, err
	}
	if err := validatePartitionState(st); err != nil {
		return PartitionState{}, err
	}
	st = st.clone()
	st.PartitionEpoch++
	key := partitionKey(st.TopicID, st.Partition)
	data := encodePartition(st)
	rev, err := s.partsKV.Update(ctx, key, data, st.Revision)
	if err != nil {
		if isWrongLastSeq(err) {
			return PartitionState{}, fmt.Errorf("%w: partition %s-%d at revision %d: %w", ErrConflict, st.Topic, st.Partition, st.Revision, err)
		}
		return PartitionState{}, fmt.Errorf("controlplane: update partition %s-%d: %w", st.Topic, st.Partition, err)
	}
	st.Revision = rev
	s.apply((*cache).applyPartition, decodeAhead(change{key: key, rev: rev, value: data}))
	return st, nil
}

// Landed reports whether st's partition record now holds what
// UpdatePartition(st) writes: a write whose answer was lost (a timeout, a
// connection cut after the server stored it) may have landed. When it
// has, the cache takes the record and Landed returns it as written.
func (s *Store) Landed(ctx context.Context, st PartitionState) (PartitionState, bool) {
	want := st.clone()
	want.PartitionEpoch++
	key := partitionKey(want.TopicID, want.Partition)
	e, err := s.partsKV.Get(ctx, key)
	if err != nil || !bytes.Equal(e.Value(), encodePartition(want)) {
		return PartitionState{}, false
	}
	want.Revision = e.Revision()
	s.apply((*cache).applyPartition, decodeAhead(change{key: key, rev: want.Revision, value: e.Value()}))
	return want, true
}

func validatePartitionState(st PartitionState) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s-%d: %s", ErrInvalidPartitionState, st.Topic, st.Partition, why)
	}
	switch {
	case st.Revision == 0:
		return bad("no revision; read the state from the store first")
	case st.TopicID.IsZero():
		return bad("no topic id")
	case st.Partition < 0:
		return bad("negative partition")
	case len(st.Replicas) == 0:
		return bad("no replicas")
	}
	seen := make(map[int32]bool, len(st.Replicas))
	for _, r := range st.Replicas {
		if seen[r] {
			return bad(fmt.Sprintf("replica %d listed twice", r))
		}
		seen[r] = true
	}
	if st.Leader != -1 && !seen[st.Leader] {
		return bad(fmt.Sprintf("leader %d is not a replica", st.Leader))
	}
	inISR := make(map[int32]bool, len(st.ISR))
	for _, r := range st.ISR {
		if !seen[r] || inISR[r] {
			return bad(fmt.Sprintf("ISR %v is not a set of replicas", st.ISR))
		}
		inISR[r] = true
	}
	for _, r := range st.ELR {
		if !seen[r] || inISR[r] {
			return bad(fmt.Sprintf("ELR %v is not a set of replicas outside the ISR", st.ELR))
		}
	}
	moving := make(map[int32]bool, len(st.AddingReplicas)+len(st.RemovingReplicas))
	for _, r := range slices.Concat(st.AddingReplicas, st.RemovingReplicas) {
		if !seen[r] || moving[r] {
			return bad(fmt.Sprintf("adding %v and removing %v are not disjoint sets of replicas", st.AddingReplicas, st.RemovingReplicas))
		}
		moving[r] = true
	}
	return nil
}
