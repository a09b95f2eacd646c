package share

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// StateTopic is Kafka's internal topic of share-partition state.
const StateTopic = "__share_group_state"

// DefaultStatePartitions is share.coordinator.state.topic.num.partitions.
const DefaultStatePartitions = 50

// ErrNotCoordinator: this node does not lead the key's __share_group_state
// partition (NOT_COORDINATOR).
var ErrNotCoordinator = errors.New("share: not the share coordinator")

// StatePartitionFor is the __share_group_state partition of key: Kafka's
// abs(hash("group:topicId:partition")) % partitions, the topic id in
// Kafka's text form (URL-safe base64 without padding).
func StatePartitionFor(key StateKey, partitions int32) int32 {
	s := key.Group + ":" + base64.RawURLEncoding.EncodeToString(key.TopicID[:]) + ":" + strconv.Itoa(int(key.Partition))
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}

// ParseStateKey reads a share coordinator key, "group:topicId:partition"
// (FindCoordinator v6 key type 2, KIP-932), as Kafka's
// SharePartitionKey.getInstance does: exactly three parts, the topic id
// in Kafka's text form, the partition a non-negative number.
func ParseStateKey(s string) (StateKey, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || parts[0] == "" {
		return StateKey{}, fmt.Errorf("share: coordinator key %q is not group:topicId:partition", s)
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(id) != 16 {
		return StateKey{}, fmt.Errorf("share: coordinator key %q: bad topic id", s)
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 {
		return StateKey{}, fmt.Errorf("share: coordinator key %q: bad partition", s)
	}
	k := StateKey{Group: parts[0], Partition: int32(p)}
	copy(k.TopicID[:], id)
	return k, nil
}

// StateCoordinator is the share coordinator of the __share_group_state
// partitions this node leads: the share-state APIs (Initialize, Read,
// Write, Delete and ReadSummary ShareGroupState) on a replicated,
// compacted log of ShareSnapshot records. A partition's states are read
// from its log (start to end) the first time it is used in a leader
// epoch. Safe for concurrent use.
type StateCoordinator struct {
	authz      *authz.Authorizer
	leaders    partition.Leaders
	partitions int32
	timeout    time.Duration

	mu     sync.Mutex
	shards map[int32]*stateShard
}

type stateShard struct {
	mu     sync.Mutex // serialises loads and appends of this partition
	epoch  int32      // the leader epoch it was loaded in
	loaded bool
	rep    *partition.Replica
	states map[StateKey]*Snapshot
	snaps  map[StateKey]uint16 // snapshot epochs
}

// NewStateCoordinator serves the state of the partitions leaders says
// this node leads; writes wait up to timeout for replication.
func NewStateCoordinator(az *authz.Authorizer, leaders partition.Leaders, partitions int32, timeout time.Duration) *StateCoordinator {
	if partitions <= 0 {
		partitions = DefaultStatePartitions
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &StateCoordinator{authz: az, leaders: leaders, partitions: partitions, timeout: timeout, shards: map[int32]*stateShard{}}
}

// shard returns key's shard, loaded in the current leader epoch, locked.
// The caller unlocks sh.mu.
func (c *StateCoordinator) shard(key StateKey) (*stateShard, error) {
	p := StatePartitionFor(key, c.partitions)
	rep, err := c.leaders.Leader(StateTopic, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s-%d: %w", ErrNotCoordinator, StateTopic, p, err)
	}
	c.mu.Lock()
	sh := c.shards[p]
	if sh == nil {
		sh = &stateShard{}
		c.shards[p] = sh
	}
	c.mu.Unlock()
	sh.mu.Lock()
	if sh.loaded && sh.rep == rep && sh.epoch == rep.LeaderEpoch() {
		return sh, nil
	}
	epoch := rep.LeaderEpoch()
	states, snaps, err := loadStates(rep)
	if err != nil {
		sh.mu.Unlock()
		return nil, err
	}
	sh.rep, sh.epoch, sh.states, sh.snaps, sh.loaded = rep, epoch, states, snaps, true
	return sh, nil
}

// loadStates replays a __share_group_state partition to its log end.
func loadStates(rep *partition.Replica) (map[StateKey]*Snapshot, map[StateKey]uint16, error) {
	states, snaps := map[StateKey]*Snapshot{}, map[StateKey]uint16{}
	err := coordinator.Replay(rep, StateTopic, func(h *batch.Header, one []byte) error {
		if h.Control() {
			return nil
		}
		return batch.ForEachRecord(one, 64<<20, func(r *batch.Record) error {
			rec, err := DecodeStateRecord(r.Key, r.Value)
			if err != nil {
				return nil // not a record of ours: skipped, as Kafka's loader does
			}
			Apply(states, rec)
			snaps[rec.Key] = rec.SnapshotEpoch
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return states, snaps, nil
}

// Read returns key's state; nil when it has none.
func (c *StateCoordinator) Read(key StateKey) (*Snapshot, error) {
	sh, err := c.shard(key)
	if err != nil {
		return nil, err
	}
	defer sh.mu.Unlock()
	s := sh.states[key]
	if s == nil {
		return nil, nil
	}
	out := *s
	out.Batches = append([]StateBatch(nil), s.Batches...)
	return &out, nil
}

// Write stores s as key's state (a ShareSnapshot record) and returns once
// it is replicated. A write of an older state epoch than the stored one
// is refused (FENCED_STATE_EPOCH): the partition was reset meanwhile.
func (c *StateCoordinator) Write(ctx context.Context, key StateKey, s Snapshot) error {
	return c.append(ctx, key, &s)
}

// Delete removes key's state (a tombstone).
func (c *StateCoordinator) Delete(ctx context.Context, key StateKey) error {
	return c.append(ctx, key, nil)
}

// ErrFencedStateEpoch is a write of an older state epoch.
var ErrFencedStateEpoch = errors.New("share: fenced state epoch")

func (c *StateCoordinator) append(ctx context.Context, key StateKey, s *Snapshot) error {
	sh, err := c.shard(key)
	if err != nil {
		return err
	}
	if s != nil {
		if cur := sh.states[key]; cur != nil && s.StateEpoch < cur.StateEpoch {
			sh.mu.Unlock()
			return fmt.Errorf("%w: %d below %d", ErrFencedStateEpoch, s.StateEpoch, cur.StateEpoch)
		}
	}
	rec := batch.Record{Key: EncodeStateKey(key, false)}
	if s != nil {
		sh.snaps[key]++
		rec.Value = EncodeSnapshotValue(sh.snaps[key], *s)
	}
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	b, err := batch.Build(nil, opts, []batch.Record{rec})
	if err != nil {
		sh.mu.Unlock()
		return err
	}
	res, err := sh.rep.AppendLeader(b)
	if err != nil {
		sh.loaded = false
		sh.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrNotCoordinator, err)
	}
	if s != nil {
		cp := *s
		sh.states[key] = &cp
	} else {
		delete(sh.states, key)
	}
	rep := sh.rep
	sh.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := rep.WaitCommitted(wctx, res.LastOffset, res.LeaderEpoch); err != nil {
		return fmt.Errorf("%w: not replicated: %w", ErrNotCoordinator, err)
	}
	return nil
}

// Register serves the share-state APIs on reg.
func (c *StateCoordinator) Register(reg *kafka.Registry) {
	reg.Register(kmsg.InitializeShareGroupState, 0, 0, c.handleInitializeShareGroupState)
	reg.Register(kmsg.ReadShareGroupState, 0, 0, c.handleReadShareGroupState)
	reg.Register(kmsg.WriteShareGroupState, 0, 1, c.handleWriteShareGroupState)
	reg.Register(kmsg.DeleteShareGroupState, 0, 0, c.handleDeleteShareGroupState)
	reg.Register(kmsg.ReadShareGroupStateSummary, 0, 1, c.handleReadShareGroupStateSummary)
}

// stateErrCode is the Kafka error code of a share-state failure.
func stateErrCode(err error) int16 {
	switch {
	case errors.Is(err, ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrFencedStateEpoch):
		return kerr.FencedStateEpoch.Code
	}
	return kafkaerr.Code(err)
}
