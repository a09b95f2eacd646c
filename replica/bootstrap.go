package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/leaderepoch"
	"github.com/shale-io/shale/tiering"
)

// Replication from the remote tail (KIP-405's follower path). A follower
// whose log ends below the leader's local log start — it started with an
// empty disk, or was away while the leader tiered and deleted segments —
// does not copy history: the leader answers its fetch
// OFFSET_MOVED_TO_TIERED_STORAGE (or OFFSET_OUT_OF_RANGE below the remote
// log start), and the follower
//
//  1. asks the leader ListOffsets EARLIEST_LOCAL (-4) for the leader's local
//     log start L, and EARLIEST (-2) for the partition's log start;
//  2. finds in the remote log metadata the COPY_FINISHED segment holding
//     L-1 (normally ending there), and reads its epochs and producer-state
//     snapshot objects from the bucket;
//  3. resets its replica (partition.Replica.ResetFromRemote) to an empty
//     log at that segment's end + 1, with that epoch history and producer
//     state, and fetches from there.
//
// A follower whose missing offsets are retained nowhere (a topic without
// remote storage, or one whose log start the leader moved to L by retention
// or DeleteRecords before they were tiered) restarts at L with no history
// and empty producer state, as Kafka's truncateFullyAndStartAt does; the
// first batch fetched at L brings its epoch. planBootstrap is the decision,
// without I/O.

// remoteTier is the cold tier the follower bootstrap reads: the remote
// segment metadata and the node's bucket. Set once tiering has started.
type remoteTier struct {
	meta     RemoteSegments
	bucket   objstore.Bucket
	inEffect func() bool // whether this node tiers (tiering.Manager.InEffect)
}

// SetRemoteTier gives the fetchers the cold tier: the remote segment
// metadata, the node's bucket, and whether the node tiers at the moment
// (nil: always), called by the node once tiering has started; until then a
// bootstrap waits.
func (r *Manager) SetRemoteTier(meta RemoteSegments, bucket objstore.Bucket, inEffect func() bool) {
	r.fetchers.tier.Store(&remoteTier{meta: meta, bucket: bucket, inEffect: inEffect})
}

// tiers reports whether a replica of a topic with config remote.storage.enable
// is tiered on this node: tiering has started here and is in effect.
// Before it starts this is true (the replica is left alone, as tiered).
func (f *fetchers) tiers() bool {
	t := f.tier.Load()
	return t == nil || t.inEffect == nil || t.inEffect()
}

// Bootstrap errors. errNotBehind hands the partition to the divergence
// check; the others pause it and are retried with a backoff
// (bootstrapRetry).
var (
	// errNotBehind: the leader's local log start is not above this
	// replica's log end; the fetch error was something else (divergence).
	errNotBehind = errors.New("replica bootstrap: the leader's local log reaches this replica's log end")
	// errNoRemoteTier: tiering has not started on this node yet.
	errNoRemoteTier = errors.New("replica bootstrap: the cold tier is not open yet")
	// errNoRemoteSegment: no committed remote segment holds the offset
	// below the leader's local log start (yet: metadata may lag).
	errNoRemoteSegment = errors.New("replica bootstrap: no remote segment below the leader's local log start")
)

// Retry pacing of failed bootstraps (bootstrapRetry).
const (
	bootstrapRetryMin  = 500 * time.Millisecond
	bootstrapRetryMax  = 10 * time.Second
	bootstrapWarnEvery = 30 * time.Second
)

// bootstrapRetry paces the retries of one partition's failing bootstrap
// and their logs. The pause doubles from bootstrapRetryMin up to
// bootstrapRetryMax; the first failure is logged at Warn, then at most one
// failure every bootstrapWarnEvery, the others at Debug. It reads no
// clock. The zero value is ready; a success or errNotBehind resets it to
// zero. REQUIRES: owned by the partition's fetcher goroutine.
type bootstrapRetry struct {
	failures int           // consecutive failures
	pause    time.Duration // the last pause
	lastWarn time.Time     // when a failure was last logged at Warn
}

// failed records a failure at now and returns how long the partition
// pauses before the next attempt and the level to log this failure at.
func (r *bootstrapRetry) failed(now time.Time) (time.Duration, slog.Level) {
	r.failures++
	r.pause = min(max(2*r.pause, bootstrapRetryMin), bootstrapRetryMax)
	level := slog.LevelDebug
	if r.failures == 1 || now.Sub(r.lastWarn) >= bootstrapWarnEvery {
		level, r.lastWarn = slog.LevelWarn, now
	}
	return r.pause, level
}

// maxBootstrapObject bounds an epochs or snapshot object read whole.
const maxBootstrapObject = 64 << 20

// bootstrapTimeout bounds one bootstrap attempt (two ListOffsets, two GETs).
const bootstrapTimeout = 30 * time.Second

// bootstrapPlan is what a follower behind the leader's local log start does:
// restart its log, empty, at offset, with the state below offset taken
// from the remote segment when fromRemote, or with no history and empty
// producer state (Kafka's truncateFullyAndStartAt) when not.
type bootstrapPlan struct {
	offset     int64
	fromRemote bool
	segment    controlplane.RemoteSegment // when fromRemote
}

// bootstrapInput is what planBootstrap decides from.
type bootstrapInput struct {
	leo        int64 // this replica's log end
	localStart int64 // the leader's local log start, L (ListOffsets EARLIEST_LOCAL)
	logStart   int64 // the partition's log start on the leader (EARLIEST)
	// remoteEnabled is the topic's remote.storage.enable.
	remoteEnabled bool
	// tierOpen says whether the node's cold tier is open; segs are then the
	// partition's remote segments, in any state, sorted by base offset as
	// RemoteLog.ListRemoteSegments gives them.
	tierOpen bool
	segs     []controlplane.RemoteSegment
}

// planBootstrap decides how a follower rebuilds when the leader's fetch
// answer says its log end is out of the leader's local range. It does no
// I/O. In order:
//
//   - L <= leo: errNotBehind (the leader holds this replica's log end; the
//     fetch failed for another reason, such as divergence);
//   - the tier is not open: errNoRemoteTier (node start; without the
//     metadata it cannot tell whether a remote segment holds the state);
//   - a COPY_FINISHED segment holds L-1 (of the highest leader epoch when
//     several do): restart at its end + 1 with the state it carries;
//   - else, when nothing below L is retained (log start >= L: retention or
//     DeleteRecords removed it) or remote storage is disabled: restart at L
//     with no history and empty producer state;
//   - else errNoRemoteSegment: data below L is retained remotely but its
//     segment's metadata has not reached this node yet.
func planBootstrap(in bootstrapInput) (bootstrapPlan, error) {
	if in.localStart <= in.leo {
		return bootstrapPlan{}, errNotBehind
	}
	if !in.tierOpen {
		return bootstrapPlan{}, errNoRemoteTier
	}
	if seg, ok := controlplane.SegmentForOffset(in.segs, in.localStart-1); ok {
		// seg.EndOffset >= L-1 >= leo: the restart is past leo.
		return bootstrapPlan{offset: seg.EndOffset + 1, fromRemote: true, segment: seg}, nil
	}
	if !in.remoteEnabled || in.logStart >= in.localStart {
		return bootstrapPlan{offset: in.localStart}, nil
	}
	return bootstrapPlan{}, fmt.Errorf("%w: offset %d (log start %d)", errNoRemoteSegment, in.localStart-1, in.logStart)
}

// bootstrap rebuilds the replica of k from the remote tail when the leader's
// local log starts above its log end; errNotBehind when it does not.
func (ft *fetcher) bootstrap(ctx context.Context, b *kgo.Broker, k replicaKey, p *fetchPart) error {
	ctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	localStart, _, err := ft.listOffset(ctx, b, k, p.epoch, -4)
	if err != nil {
		return fmt.Errorf("leader's local log start: %w", err)
	}
	topic, ok := ft.f.store.Topic(k.topic)
	if !ok {
		return fmt.Errorf("topic %s: %w", k.topic, partition.ErrUnknownTopicOrPartition)
	}
	tier := ft.f.tier.Load()
	var segs []controlplane.RemoteSegment
	if tier != nil {
		segs = tier.meta.ListRemoteSegments(topic.ID, k.partition)
	}
	leo := p.rep.Log().LogEndOffset()
	if localStart <= leo {
		return errNotBehind // without a second request
	}
	logStart, _, err := ft.listOffset(ctx, b, k, p.epoch, -2)
	if err != nil {
		return fmt.Errorf("leader's log start: %w", err)
	}
	plan, err := planBootstrap(bootstrapInput{leo: leo, localStart: localStart, logStart: logStart,
		remoteEnabled: p.rep.Config().Bool(config.RemoteStorageEnable), tierOpen: tier != nil, segs: segs})
	if err != nil {
		return err
	}
	tail := partition.RemoteTail{Offset: plan.offset}
	if plan.fromRemote {
		if tail, err = readRemoteTail(ctx, tier.bucket, plan.segment); err != nil {
			return err
		}
		if tail.ProducerSnapshot == nil {
			ft.log.Warn("remote segment has no producer snapshot; idempotence state starts empty",
				"topic", k.topic, "partition", k.partition, "segment", plan.segment.SegmentID)
		}
	}
	tail.LogStart = logStart
	if err := p.rep.ResetFromRemote(tail); err != nil {
		return err
	}
	ft.log.Info("follower rebuilt from the remote tail", "topic", k.topic, "partition", k.partition,
		"from", leo, "to", tail.Offset, "leader_local_start", localStart, "log_start", logStart,
		"remote_segment", plan.segment.SegmentID, "epochs", len(tail.Epochs), "snapshot_bytes", len(tail.ProducerSnapshot))
	return nil
}

// readRemoteTail reads the state of the data up to seg's end from the
// bucket: the restart offset (seg.EndOffset + 1), the leader-epoch history
// (its epochs object, or the metadata's SegmentEpochs when it has none) and
// the producer-state snapshot bytes (nil when it has none). LogStart is
// left for the caller. A listed object missing from the bucket, unreadable,
// larger than maxBootstrapObject or (epochs) malformed is an error.
func readRemoteTail(ctx context.Context, bucket objstore.Bucket, seg controlplane.RemoteSegment) (partition.RemoteTail, error) {
	tail := partition.RemoteTail{Offset: seg.EndOffset + 1}
	if key := tiering.ObjectKey(seg, tiering.KindEpochs); key != "" {
		data, err := readObject(ctx, bucket, key)
		if err != nil {
			return partition.RemoteTail{}, err
		}
		es, err := tiering.DecodeEpochs(data)
		if err != nil {
			return partition.RemoteTail{}, fmt.Errorf("%s: %w", key, err)
		}
		tail.Epochs = es
	} else {
		tail.Epochs = seg.SegmentEpochs
	}
	// A record that covers a prefix of its objects (a fork's cut inside
	// the segment): the history past its end is not this log's, and the
	// snapshot is the state at the objects' end, not at the cut, so the
	// producer state starts empty.
	if seg.ObjectSize > 0 {
		tail.Epochs = slices.DeleteFunc(tail.Epochs, func(e leaderepoch.Entry) bool { return e.StartOffset > seg.EndOffset })
	}
	if key := tiering.ObjectKey(seg, tiering.KindSnapshot); key != "" && seg.ObjectSize == 0 {
		data, err := readObject(ctx, bucket, key)
		if err != nil {
			return partition.RemoteTail{}, err
		}
		tail.ProducerSnapshot = data
	}
	return tail, nil
}

// readObject reads a whole small object.
func readObject(ctx context.Context, b objstore.Bucket, key string) ([]byte, error) {
	rc, err := b.GetRange(ctx, key, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBootstrapObject+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	if len(data) > maxBootstrapObject {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", key, maxBootstrapObject)
	}
	return data, nil
}

// listOffset asks the leader ListOffsets for one special timestamp (-2
// EARLIEST, -4 EARLIEST_LOCAL) of k, fenced by the follower's view of the
// leader epoch; it returns the offset and the leader epoch there.
func (ft *fetcher) listOffset(ctx context.Context, b *kgo.Broker, k replicaKey, epoch int32, ts int64) (int64, int32, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = ft.f.self
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = k.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = k.partition, epoch, ts
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	kresp, err := b.Request(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, errors.New("malformed ListOffsets response")
	}
	r := resp.Topics[0].Partitions[0]
	if r.ErrorCode != 0 {
		return 0, 0, kerr.ErrorForCode(r.ErrorCode)
	}
	if r.Offset < 0 {
		return 0, 0, fmt.Errorf("ListOffsets %d: no offset", ts)
	}
	return r.Offset, r.LeaderEpoch, nil
}
