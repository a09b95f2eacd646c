package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
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
// A topic without remote storage whose leader has deleted the offsets the
// follower needs (retention, DeleteRecords) restarts at L with no history,
// as Kafka's truncateFullyAndStartAt does.

// remoteTier is the cold tier the follower bootstrap reads: the remote
// segment metadata and the node's bucket. Set once tiering has started.
type remoteTier struct {
	meta   *controlplane.RemoteLog
	bucket objstore.Bucket
}

// setRemoteTier gives the fetchers the cold tier (called by the node once
// tiering has started; until then a bootstrap waits).
func (f *replicaFetchers) setRemoteTier(meta *controlplane.RemoteLog, bucket objstore.Bucket) {
	f.tier.Store(&remoteTier{meta: meta, bucket: bucket})
}

// Bootstrap errors; each pauses the partition and is retried.
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

// maxBootstrapObject bounds an epochs or snapshot object read whole.
const maxBootstrapObject = 64 << 20

// bootstrapTimeout bounds one bootstrap attempt (two ListOffsets, two GETs).
const bootstrapTimeout = 30 * time.Second

// bootstrap rebuilds the replica of k from the remote tail when the leader's
// local log starts above its log end; errNotBehind when it does not.
func (ft *fetcher) bootstrap(ctx context.Context, b *kgo.Broker, k replicaKey, p *fetchPart) error {
	ctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	localStart, localEpoch, err := ft.listOffset(ctx, b, k, p.epoch, -4)
	if err != nil {
		return fmt.Errorf("leader's local log start: %w", err)
	}
	leo := p.rep.Log().LogEndOffset()
	if localStart <= leo {
		return errNotBehind
	}
	logStart, _, err := ft.listOffset(ctx, b, k, p.epoch, -2)
	if err != nil {
		return fmt.Errorf("leader's log start: %w", err)
	}
	tail, err := ft.remoteTail(ctx, k, p.rep, localStart, localEpoch)
	if err != nil {
		return err
	}
	tail.LogStart = logStart
	if tail.Offset <= leo { // a remote segment ends below our own end: nothing to skip
		return errNotBehind
	}
	if err := p.rep.ResetFromRemote(tail); err != nil {
		return err
	}
	ft.log.Info("follower rebuilt from the remote tail", "topic", k.topic, "partition", k.partition,
		"from", leo, "to", tail.Offset, "leader_local_start", localStart, "log_start", logStart,
		"epochs", len(tail.Epochs), "snapshot_bytes", len(tail.ProducerSnapshot))
	return nil
}

// remoteTail reads the state of the data below the leader's local log start
// L from the remote segment holding L-1. A topic without remote storage and
// without remote segments starts at L with no history.
func (ft *fetcher) remoteTail(ctx context.Context, k replicaKey, rep *partition.Replica, localStart int64, localEpoch int32) (partition.RemoteTail, error) {
	tier := ft.f.tier.Load()
	topic, ok := ft.f.store.Topic(k.topic)
	if !ok {
		return partition.RemoteTail{}, fmt.Errorf("topic %s: %w", k.topic, partition.ErrUnknownTopicOrPartition)
	}
	var seg controlplane.RemoteSegment
	found := false
	if tier != nil {
		seg, found = controlplane.SegmentForOffset(tier.meta.ListRemoteSegments(topic.ID, k.partition), localStart-1)
	}
	if !found {
		if !rep.Config().Bool(config.RemoteStorageEnable) {
			var epochs []segment.EpochEntry
			if localEpoch >= 0 {
				epochs = []segment.EpochEntry{{Epoch: localEpoch, StartOffset: localStart}}
			}
			return partition.RemoteTail{Offset: localStart, Epochs: epochs}, nil
		}
		if tier == nil {
			return partition.RemoteTail{}, errNoRemoteTier
		}
		return partition.RemoteTail{}, fmt.Errorf("%w: offset %d", errNoRemoteSegment, localStart-1)
	}
	tail := partition.RemoteTail{Offset: seg.EndOffset + 1}
	if key := tiering.ObjectKey(seg, tiering.KindEpochs); key != "" {
		data, err := readObject(ctx, tier.bucket, key)
		if err != nil {
			return partition.RemoteTail{}, err
		}
		es, err := tiering.DecodeEpochs(data)
		if err != nil {
			return partition.RemoteTail{}, fmt.Errorf("%s: %w", key, err)
		}
		tail.Epochs = toSegmentEpochs(es)
	} else {
		tail.Epochs = toSegmentEpochs(seg.SegmentEpochs)
	}
	if key := tiering.ObjectKey(seg, tiering.KindSnapshot); key != "" {
		data, err := readObject(ctx, tier.bucket, key)
		if err != nil {
			return partition.RemoteTail{}, err
		}
		tail.ProducerSnapshot = data
	} else {
		ft.log.Warn("remote segment has no producer snapshot; idempotence state starts empty",
			"topic", k.topic, "partition", k.partition, "segment", seg.SegmentID)
	}
	return tail, nil
}

func toSegmentEpochs(es []controlplane.EpochEntry) []segment.EpochEntry {
	out := make([]segment.EpochEntry, len(es))
	for i, e := range es {
		out[i] = segment.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return out
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
