package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
)

// maxCASRetries bounds the read-modify-write retries of topic updates.
const maxCASRetries = 8

// CreateTopic creates a topic with a new TopicID and its partition states:
// replicas assigned by AssignReplicas over the live brokers from a random
// start, leader the first replica, leader epoch 0, ISR all replicas. The
// partition states are written first (create-if-absent, keyed by the new
// id), then the topic key (create-if-absent on the name), so a topic is
// never visible without its partitions in the KV. configs are the explicit
// topic configs, stored as given; validating them is the caller's job.
//
// Errors: ErrInvalidTopicName, ErrInvalidPartitions (partitions < 1),
// ErrInvalidReplicationFactor (rf < 1 or above the live broker count),
// ErrTopicExists.
func (s *Store) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (Topic, error) {
	return s.createTopic(ctx, name, partitions, rf, nil, configs)
}

// CreateTopicWithAssignment creates a topic whose partition p has the
// replicas assignment[p], the first being its leader (CreateTopics with a
// manual assignment); otherwise as CreateTopic. The assignment is checked
// by ValidateAssignment against the registered and the live brokers
// (ErrInvalidReplicaAssignment).
func (s *Store) CreateTopicWithAssignment(ctx context.Context, name string, assignment [][]int32, configs map[string]string) (Topic, error) {
	if len(assignment) == 0 {
		return Topic{}, fmt.Errorf("%w: no partitions", ErrInvalidReplicaAssignment)
	}
	return s.createTopic(ctx, name, int32(len(assignment)), int16(len(assignment[0])), assignment, configs)
}

// createTopic is CreateTopic with the assignment given (validated here), or
// nil for AssignReplicas'.
func (s *Store) createTopic(ctx context.Context, name string, partitions int32, rf int16, assignment [][]int32, configs map[string]string) (Topic, error) {
	if err := s.checkOpen(); err != nil {
		return Topic{}, err
	}
	if err := ValidateTopicName(name); err != nil {
		return Topic{}, err
	}
	if partitions < 1 {
		return Topic{}, fmt.Errorf("%w: %d", ErrInvalidPartitions, partitions)
	}
	if _, ok := s.Topic(name); ok {
		return Topic{}, fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	brokers := s.Brokers()
	if assignment != nil {
		if err := ValidateAssignment(assignment, int(rf), s.Registered, liveIn(brokers)); err != nil {
			return Topic{}, err
		}
	} else if rf < 1 || int(rf) > len(brokers) {
		return Topic{}, fmt.Errorf("%w: %d with %d live brokers", ErrInvalidReplicationFactor, rf, len(brokers))
	}
	t := Topic{Name: name, ID: NewTopicID(), Partitions: partitions, ReplicationFactor: rf,
		Configs: maps.Clone(configs), Internal: isInternalTopic(name)}
	if assignment == nil {
		assignment = AssignReplicas(brokers, partitions, rf, rand.IntN(len(brokers)))
	}
	if err := s.createPartitions(ctx, t, 0, assignment, liveIn(brokers)); err != nil {
		return Topic{}, err
	}
	data := encodeTopic(t)
	rev, err := s.topicsKV.Create(ctx, topicKey(name), data)
	if err != nil {
		s.removePartitionStates(ctx, t.ID, 0, partitions)
		if isWrongLastSeq(err) {
			return Topic{}, fmt.Errorf("%w: %q", ErrTopicExists, name)
		}
		return Topic{}, fmt.Errorf("controlplane: create topic %q: %w", name, err)
	}
	s.apply((*cache).applyTopic, change{key: topicKey(name), rev: rev, value: data})
	return t.clone(), nil
}

// createPartitions writes the initial states of partitions first.. with
// the given replica assignment, create-if-absent: the ISR is the live
// replicas, as Kafka's controller makes it, led by the first of them (a
// fenced replica of a manual assignment joins by the leader's catch-up
// rule when it is back). When none is live, which only a broker dying
// during an automatic placement can cause, the ISR is every replica, led by
// the first, and the controller elects from there.
func (s *Store) createPartitions(ctx context.Context, t Topic, first int32, assignment [][]int32, live func(int32) bool) error {
	keys := make([]string, len(assignment))
	values := make([][]byte, len(assignment))
	for i, replicas := range assignment {
		p := first + int32(i)
		isr := slices.DeleteFunc(slices.Clone(replicas), func(b int32) bool { return !live(b) })
		if len(isr) == 0 {
			isr = slices.Clone(replicas)
		}
		st := PartitionState{TopicID: t.ID, Topic: t.Name, Partition: p, Replicas: replicas,
			Leader: isr[0], LeaderEpoch: 0, ISR: isr}
		keys[i], values[i] = partitionKey(t.ID, p), encodePartition(st)
	}
	revs, err := kvCreateMany(ctx, s.js, s.partsKV, BucketPartitions, keys, values)
	for i, rev := range revs {
		s.apply((*cache).applyPartition, decodeAhead(change{key: keys[i], rev: rev, value: values[i]}))
	}
	if err != nil {
		s.removePartitionStates(ctx, t.ID, first, first+int32(len(assignment)))
		if isWrongLastSeq(err) {
			return fmt.Errorf("%w: a partition of %q already exists", ErrConflict, t.Name)
		}
		return fmt.Errorf("controlplane: create partitions of %q: %w", t.Name, err)
	}
	return nil
}

// removePartitionStates deletes partitions [from, to) of topic id, best
// effort: it undoes a half-done create, and leftovers are keyed by an id no
// topic refers to. Failures are logged.
func (s *Store) removePartitionStates(ctx context.Context, id TopicID, from, to int32) {
	for p := from; p < to; p++ {
		if err := s.deletePartitionState(ctx, id, p); err != nil {
			s.log.Warn("could not remove partition state", "topic_id", id, "partition", p, "err", err)
		}
	}
}

func (s *Store) deletePartitionState(ctx context.Context, id TopicID, p int32) error {
	key := partitionKey(id, p)
	rev, err := kvDelete(ctx, s.js, BucketPartitions, key, 0)
	if err != nil {
		return err
	}
	s.apply((*cache).applyPartition, change{key: key, rev: rev, deleted: true})
	return nil
}

// DeleteTopic removes the topic's partition states, then the topic.
// ErrUnknownTopic when it does not exist. If it fails part way, the topic
// stays (possibly with some partition states gone) and DeleteTopic can be
// called again.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	t, rev, err := s.freshTopic(ctx, name)
	if err != nil {
		return err
	}
	for p := range t.Partitions {
		if err := s.deletePartitionState(ctx, t.ID, p); err != nil {
			return err
		}
	}
	for range maxCASRetries {
		drev, err := kvDelete(ctx, s.js, BucketTopics, topicKey(name), rev)
		if err == nil {
			s.apply((*cache).applyTopic, change{key: topicKey(name), rev: drev, deleted: true})
			return nil
		}
		if !errors.Is(err, ErrConflict) {
			return err
		}
		// Changed under us (configs, partitions): delete it if it is still
		// the same topic, and any partitions it gained.
		cur, crev, err := s.freshTopic(ctx, name)
		if err != nil {
			return err
		}
		if cur.ID != t.ID {
			return fmt.Errorf("%w: %q was deleted and created again meanwhile", ErrUnknownTopic, name)
		}
		for p := t.Partitions; p < cur.Partitions; p++ {
			if err := s.deletePartitionState(ctx, t.ID, p); err != nil {
				return err
			}
		}
		t, rev = cur, crev
	}
	return fmt.Errorf("%w: delete topic %q: too many concurrent changes", ErrConflict, name)
}

// freshTopic reads a topic from the KV (not the cache), for read-modify-write.
func (s *Store) freshTopic(ctx context.Context, name string) (Topic, uint64, error) {
	e, err := s.topicsKV.Get(ctx, topicKey(name))
	if isKeyGone(err) {
		return Topic{}, 0, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err != nil {
		return Topic{}, 0, fmt.Errorf("controlplane: read topic %q: %w", name, err)
	}
	t, err := decodeTopic(e.Value())
	if err != nil {
		return Topic{}, 0, err
	}
	s.apply((*cache).applyTopic, changeFromEntry(e))
	return t, e.Revision(), nil
}

// updateTopic applies modify to the latest topic and writes it with
// compare-and-set, retrying on conflict. modify returns an error to abort.
func (s *Store) updateTopic(ctx context.Context, name string, modify func(*Topic) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	for range maxCASRetries {
		t, rev, err := s.freshTopic(ctx, name)
		if err != nil {
			return err
		}
		if err := modify(&t); err != nil {
			return err
		}
		data := encodeTopic(t)
		nrev, err := s.topicsKV.Update(ctx, topicKey(name), data, rev)
		if err == nil {
			s.apply((*cache).applyTopic, change{key: topicKey(name), rev: nrev, value: data})
			return nil
		}
		if !isWrongLastSeq(err) {
			return fmt.Errorf("controlplane: update topic %q: %w", name, err)
		}
	}
	return fmt.Errorf("%w: update topic %q: too many concurrent changes", ErrConflict, name)
}

// SetTopicConfigs replaces the topic's explicit configs with configs (nil
// or empty clears them), compare-and-set on the topic's revision and
// retried on conflict. ErrUnknownTopic when it does not exist.
func (s *Store) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	return s.updateTopic(ctx, name, func(t *Topic) error {
		t.Configs = maps.Clone(configs)
		return nil
	})
}

// CreatePartitions grows the topic to newCount partitions. The new
// partitions' replicas are assigned over the live brokers as CreateTopic
// does, their states written first, then the topic's count
// (compare-and-set). Errors: ErrUnknownTopic; ErrInvalidPartitions when
// newCount is not above the current count; ErrInvalidReplicationFactor when
// fewer brokers are live than the topic's replication factor; ErrConflict
// when another writer grows the topic at the same time.
func (s *Store) CreatePartitions(ctx context.Context, name string, newCount int32) error {
	return s.createPartitionsAssigned(ctx, name, newCount, nil)
}

// CreatePartitionsWithAssignment grows the topic to newCount partitions
// with the given replicas for the new ones, in order (CreatePartitions with
// a manual assignment): one list per new partition, each of the topic's
// replication factor, distinct registered brokers with at least one live
// (ValidateAssignment; ErrInvalidReplicaAssignment otherwise); otherwise as
// CreatePartitions.
func (s *Store) CreatePartitionsWithAssignment(ctx context.Context, name string, newCount int32, assignment [][]int32) error {
	if assignment == nil {
		assignment = [][]int32{}
	}
	return s.createPartitionsAssigned(ctx, name, newCount, assignment)
}

func (s *Store) createPartitionsAssigned(ctx context.Context, name string, newCount int32, assignment [][]int32) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	t, _, err := s.freshTopic(ctx, name)
	if err != nil {
		return err
	}
	if newCount <= t.Partitions {
		return fmt.Errorf("%w: topic %q has %d partitions, asked for %d", ErrInvalidPartitions, name, t.Partitions, newCount)
	}
	brokers := s.Brokers()
	old := t.Partitions
	var added [][]int32
	if assignment != nil {
		if int32(len(assignment)) != newCount-old {
			return fmt.Errorf("%w: %d new partitions, %d assignments", ErrInvalidReplicaAssignment, newCount-old, len(assignment))
		}
		if err := ValidateAssignment(assignment, int(t.ReplicationFactor), s.Registered, liveIn(brokers)); err != nil {
			return err
		}
		added = assignment
	} else {
		if int(t.ReplicationFactor) > len(brokers) {
			return fmt.Errorf("%w: %d with %d live brokers", ErrInvalidReplicationFactor, t.ReplicationFactor, len(brokers))
		}
		added = AssignReplicas(brokers, newCount, t.ReplicationFactor, rand.IntN(len(brokers)))[old:]
	}
	if err := s.createPartitions(ctx, t, old, added, liveIn(brokers)); err != nil {
		return err
	}
	err = s.updateTopic(ctx, name, func(cur *Topic) error {
		if cur.ID != t.ID || cur.Partitions != old {
			return fmt.Errorf("%w: topic %q changed while adding partitions", ErrConflict, name)
		}
		cur.Partitions = newCount
		return nil
	})
	if err != nil {
		s.removePartitionStates(ctx, t.ID, old, newCount)
	}
	return err
}

// Topic returns the named topic from the cache.
func (s *Store) Topic(name string) (Topic, bool) {
	t, ok := s.TopicShared(name)
	if !ok {
		return Topic{}, false
	}
	return t.clone(), true // the entry is never changed in place: cloned outside the lock
}

// TopicShared is Topic without the deep copy: its configs map and
// assignment are the cache's, which never changes a stored entry in place,
// so the caller must only read them (PartitionsShared). For passes that
// look up the topic of every partition of the node each few seconds: a
// copy of the configs each time was most of what an idle tiering pass
// allocated.
func (s *Store) TopicShared(name string) (Topic, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.mu.c.liveTopic(name)
	if !ok {
		return Topic{}, false
	}
	return e.val, true
}

// TopicByID returns the topic with the given id from the cache.
func (s *Store) TopicByID(id TopicID) (Topic, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	name, ok := s.mu.c.topicNames[id]
	if !ok {
		return Topic{}, false
	}
	e, ok := s.mu.c.liveTopic(name)
	if !ok {
		return Topic{}, false
	}
	return e.val.clone(), true
}

// Topics returns all topics from the cache, sorted by name. The caller owns
// the result.
func (s *Store) Topics() []Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := appendLive(make([]Topic, 0, len(s.mu.c.topicNames)), s.mu.c.topics, Topic.clone)
	slices.SortFunc(out, func(a, b Topic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
