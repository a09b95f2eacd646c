package controlplane

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/segment/leaderepoch"
)

// BucketRemoteSegments holds one record per remote (tiered) segment.
const BucketRemoteSegments = "shale_remote_segments"

// ErrFenced: a remote segment write carried a leader epoch below the
// partition's current leader epoch (or the partition no longer exists). The
// writer is a deposed leader and must stop.
var ErrFenced = errors.New("controlplane: fenced by a newer leader epoch")

// ErrInvalidRemoteSegment: a PutRemoteSegment argument that is not a
// consistent record or not a legal state transition.
var ErrInvalidRemoteSegment = errors.New("controlplane: invalid remote segment")

// RemoteSegmentState is a remote segment's lifecycle state (KIP-405's
// RemoteLogSegmentState).
type RemoteSegmentState int

// States, in lifecycle order. Legal transitions: (new) -> CopyStarted ->
// CopyFinished -> DeleteStarted -> DeleteFinished, and CopyStarted ->
// DeleteStarted for an abandoned upload.
const (
	CopyStarted RemoteSegmentState = iota + 1
	CopyFinished
	DeleteStarted
	DeleteFinished
)

var remoteStateNames = [...]string{CopyStarted: "COPY_SEGMENT_STARTED", CopyFinished: "COPY_SEGMENT_FINISHED",
	DeleteStarted: "DELETE_SEGMENT_STARTED", DeleteFinished: "DELETE_SEGMENT_FINISHED"}

func (s RemoteSegmentState) String() string {
	if s > 0 && int(s) < len(remoteStateNames) {
		return remoteStateNames[s]
	}
	return "RemoteSegmentState(" + strconv.Itoa(int(s)) + ")"
}

// validTransition reports whether a record may go from state from (0: no
// record) to state to.
func validTransition(from, to RemoteSegmentState) bool {
	switch to {
	case CopyStarted:
		return from == 0
	case CopyFinished:
		return from == CopyStarted
	case DeleteStarted:
		return from == CopyStarted || from == CopyFinished || from == DeleteStarted
	case DeleteFinished:
		return from == DeleteStarted
	}
	return false
}

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset (the segment log's leader-epoch history, restricted to one
// segment): the same type as segment.EpochEntry.
type EpochEntry = leaderepoch.Entry

// RemoteSegment is the metadata of one segment copied to the bucket. Values
// returned by a RemoteLog are copies the caller owns.
type RemoteSegment struct {
	TopicID   TopicID
	Partition int32
	// SegmentID is random and unique (NewSegmentID): an upload of the same
	// offsets by another leader gets another id and other object keys.
	SegmentID  string
	BaseOffset int64
	// EndOffset is the segment's last offset, inclusive.
	EndOffset    int64
	MaxTimestamp int64
	Size         int64 // bytes of the .log object
	// LeaderEpoch is the epoch of the leader that wrote the record; writes
	// are fenced by it.
	LeaderEpoch int32
	// SegmentEpochs is the leader-epoch history within the segment, the
	// first entry at or below BaseOffset.
	SegmentEpochs []EpochEntry
	// ObjectEndOffset and ObjectSize are the end offset and .log size of
	// the objects themselves when the record covers only a prefix of them
	// (a fork's record of a segment its cut lies in: EndOffset and Size
	// stop at the cut, readers stop there); 0 when the record covers the
	// whole objects. Object bounds validate the objects' indexes; record
	// bounds bound what is read.
	ObjectEndOffset int64
	ObjectSize      int64
	State           RemoteSegmentState
	// Objects are the bucket keys written for the segment.
	Objects   []string
	UpdatedAt time.Time
	// Revision is the KV revision the record was read at or written as;
	// pass it back to PutRemoteSegment or DeleteRemoteSegmentRecord.
	Revision uint64
}

func (r RemoteSegment) clone() RemoteSegment {
	r.SegmentEpochs = slices.Clone(r.SegmentEpochs)
	r.Objects = slices.Clone(r.Objects)
	return r
}

// ObjectBounds returns the end offset and .log size of the segment's
// objects: ObjectEndOffset and ObjectSize when the record covers a prefix
// of them, EndOffset and Size otherwise.
func (r RemoteSegment) ObjectBounds() (endOffset, size int64) {
	endOffset, size = r.EndOffset, r.Size
	if r.ObjectSize > 0 {
		endOffset, size = r.ObjectEndOffset, r.ObjectSize
	}
	return endOffset, size
}

// NewSegmentID returns a random segment id: 32 hex digits, with no '-' so
// that it can end a dash-separated object name.
func NewSegmentID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("controlplane: crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// RemoteLog is a node's handle on the remote segment metadata: a KV bucket
// followed by a watch into an in-memory cache, like the Store's buckets.
// Reads come from the cache and never block on the network; they reflect
// every write made through this RemoteLog and, after watcher delay, every
// other node's. All methods are safe for concurrent use.
//
// Writes are compare-and-set on the record's revision and fenced by leader
// epoch against shale_partitions, read fresh from NATS (not the cache). The
// fence and the write are two round trips: a leader deposed between them may
// still land one write, as in KIP-405; readers resolve overlapping segments
// by preferring the higher leader epoch (SegmentForOffset).
type RemoteLog struct {
	store *Store
	kv    jetstream.KeyValue
	log   *slog.Logger
	watch *bucketWatch

	closeOnce sync.Once

	mu struct {
		sync.RWMutex
		segs map[TopicID]map[int32]map[string]*entry[RemoteSegment]
		// tiers: the brokers' cold-tier records, by node id.
		tiers map[int32]*entry[ColdTier]
		// starts: the partitions' log start records.
		starts map[partID]*entry[int64]
		// quarantine: the quarantine entries, by "<partition key>.<id>".
		quarantine map[string]*entry[QuarantineEntry]
		// refs: by object key, how many live records and quarantine
		// entries of each topic list it (remote_log_refs.go).
		refs map[string]map[TopicID]int
		// gens: by partition, the generation of its last change to
		// segs, starts or quarantine (PartitionGen); gen is the last
		// one given out.
		gens map[partID]uint64
		gen  uint64
	}
}

// partID names a partition by its topic's id (a map key that needs no
// string, unlike partitionKey).
type partID struct {
	id TopicID
	p  int32
}

// changedLocked gives the partition a new generation. rl.mu is held for
// writing.
func (rl *RemoteLog) changedLocked(id TopicID, p int32) {
	rl.mu.gen++
	rl.mu.gens[partID{id, p}] = rl.mu.gen
}

// Gen returns the cache's last generation given out: it moves whenever any
// partition's PartitionGen does.
func (rl *RemoteLog) Gen() uint64 {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	return rl.mu.gen
}

// PartitionGen returns the partition's generation in the cache: it changes
// whenever the partition's remote segment records, its log start record or
// its quarantine entries change, and is 0 for a partition with none ever
// seen. A reader that read those at generation g may keep what it read
// while PartitionGen is still g (the tiering pass over idle partitions).
func (rl *RemoteLog) PartitionGen(id TopicID, p int32) uint64 {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	return rl.mu.gens[partID{id, p}]
}

// OpenRemoteLog creates the bucket if absent, starts its watch and waits
// until the cache holds the current records. ctx bounds the open only. Close
// the RemoteLog before the Store.
func OpenRemoteLog(ctx context.Context, s *Store) (*RemoteLog, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	kv, err := s.bucket(ctx, jetstream.KeyValueConfig{Bucket: BucketRemoteSegments,
		Description: "Shale remote (tiered) segment metadata", Replicas: s.cfg.Replicas})
	if err != nil {
		return nil, err
	}
	rl := &RemoteLog{store: s, kv: kv, log: s.log.With("bucket", BucketRemoteSegments)}
	rl.mu.segs = map[TopicID]map[int32]map[string]*entry[RemoteSegment]{}
	rl.mu.tiers = map[int32]*entry[ColdTier]{}
	rl.mu.starts = map[partID]*entry[int64]{}
	rl.mu.gens = map[partID]uint64{}
	rl.mu.quarantine = map[string]*entry[QuarantineEntry]{}
	rl.mu.refs = map[string]map[TopicID]int{}
	rl.watch, err = startWatch(s.js.Conn(), BucketRemoteSegments, s.cfg.Monitor, rl.apply)
	if err != nil {
		return nil, err
	}
	select {
	case <-rl.watch.ready:
		return rl, nil
	case <-ctx.Done():
		rl.Close()
		return nil, fmt.Errorf("controlplane: remote segments initial load: %w", ctx.Err())
	}
}

// Close stops the watch. Idempotent; the cache stays readable.
func (rl *RemoteLog) Close() {
	rl.closeOnce.Do(func() { rl.watch.stop() })
}

func remoteSegmentKey(id TopicID, p int32, segID string) string {
	return partitionKey(id, p) + "." + segID
}

func parseRemoteSegmentKey(key string) (TopicID, int32, string, error) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 || parts[2] == "" {
		return TopicID{}, 0, "", fmt.Errorf("controlplane: remote segment key %q", key)
	}
	id, p, err := parsePartitionKey(parts[0] + "." + parts[1])
	return id, p, parts[2], err
}

// apply applies one change to the cache, ignoring changes older than what
// the cache holds (a watcher delivering a write this node already applied).
func (rl *RemoteLog) apply(ch change) {
	if strings.HasPrefix(ch.key, coldTierKeyPrefix) {
		rl.applyColdTier(ch)
		return
	}
	if strings.HasPrefix(ch.key, logStartKeyPrefix) {
		rl.applyLogStart(ch)
		return
	}
	if strings.HasPrefix(ch.key, quarantineKeyPrefix) {
		rl.applyQuarantine(ch)
		return
	}
	id, p, segID, err := parseRemoteSegmentKey(ch.key)
	if err != nil {
		rl.log.Warn("ignoring remote segment key", "key", ch.key, "err", err)
		return
	}
	var seg RemoteSegment
	if !ch.deleted {
		if seg, err = decodeRemoteSegment(ch.value, ch.rev); err != nil {
			rl.log.Warn("ignoring remote segment value", "key", ch.key, "err", err)
			return
		}
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	parts := rl.mu.segs[id]
	if parts == nil {
		parts = map[int32]map[string]*entry[RemoteSegment]{}
		rl.mu.segs[id] = parts
	}
	segs := parts[p]
	if segs == nil {
		segs = map[string]*entry[RemoteSegment]{}
		parts[p] = segs
	}
	cur := segs[segID]
	if cur != nil && ch.rev <= cur.rev {
		return
	}
	if cur != nil && !cur.deleted {
		rl.refsAddLocked(id, cur.val.Objects, -1)
	}
	if !ch.deleted {
		rl.refsAddLocked(id, seg.Objects, 1)
	}
	segs[segID] = &entry[RemoteSegment]{val: seg, rev: ch.rev, deleted: ch.deleted}
	rl.changedLocked(id, p)
}

// ListRemoteSegments returns the partition's records in every state, sorted
// by base offset (then leader epoch, then segment id), from the cache. The
// caller owns the result.
func (rl *RemoteLog) ListRemoteSegments(id TopicID, p int32) []RemoteSegment {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	out := appendLive(nil, rl.mu.segs[id][p], RemoteSegment.clone)
	slices.SortFunc(out, compareRemoteSegments)
	return out
}

func compareRemoteSegments(a, b RemoteSegment) int {
	return cmp.Or(cmp.Compare(a.BaseOffset, b.BaseOffset), cmp.Compare(a.LeaderEpoch, b.LeaderEpoch),
		cmp.Compare(a.SegmentID, b.SegmentID))
}

// RemoteTopicIDs returns the topic ids that have at least one record, in no
// particular order (the reconciler uses it to find deleted topics' data).
func (rl *RemoteLog) RemoteTopicIDs() []TopicID {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	var out []TopicID
	for id, parts := range rl.mu.segs {
	topic:
		for _, segs := range parts {
			for _, e := range segs {
				if !e.deleted {
					out = append(out, id)
					break topic
				}
			}
		}
	}
	return out
}

// RemotePartitions returns the partitions of topic id that have at least one
// record, ascending.
func (rl *RemoteLog) RemotePartitions(id TopicID) []int32 {
	rl.mu.RLock()
	defer rl.mu.RUnlock()
	var out []int32
	for p, segs := range rl.mu.segs[id] {
		for _, e := range segs {
			if !e.deleted {
				out = append(out, p)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
