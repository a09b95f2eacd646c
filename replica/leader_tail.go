package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// A leader whose log is empty, of a tiered partition whose remote log holds
// finished segments, restarts the log from the remote tail before it leads:
// the partition was restored from the bucket (package restore: every
// replica starts empty), or every replica that held it lost its disk. Led
// from offset 0 instead, it would hand out offsets the bucket holds
// already. The records are read fresh from NATS (FreshRemoteSegments): a
// restore writes them just before it names the leader, and the watch may
// not have delivered them yet.

// freshRemoteSegments is the optional read of the remote metadata from
// NATS rather than from the watch (controlplane.RemoteLog has it).
type freshRemoteSegments interface {
	FreshRemoteSegments(ctx context.Context, id controlplane.TopicID, p int32) ([]controlplane.RemoteSegment, error)
}

// leaderTailTimeout bounds reading the remote tail before leading.
const leaderTailTimeout = 30 * time.Second

// leaderTailRetry is when Reconcile runs again after a leader could not
// read its remote tail (the replica stays a follower meanwhile).
const leaderTailRetry = time.Second

// prepareLeader returns whether rep may lead partition st now: true unless
// its log is empty and the remote tail it must restart from could not be
// read or applied (then it is logged and a Reconcile is queued).
func (r *Manager) prepareLeader(rep *partition.Replica, st controlplane.PartitionState) bool {
	if rep.IsLeader() || rep.Log().LogEndOffset() != 0 || !rep.Config().Bool(config.RemoteStorageEnable) {
		return true
	}
	if st.LeaderEpoch == 0 {
		// A new topic's first leader: no leader before it uploaded
		// anything (a restored partition leads at an epoch above every
		// restored one). This spares a NATS read per new partition.
		return true
	}
	tier := r.fetchers.tier.Load()
	if tier == nil {
		return true // tiering not started: nothing is known of a remote log
	}
	err := r.restartFromRemoteTail(rep, st, tier)
	if err == nil {
		return true
	}
	r.logger.Warn("not leading yet: the empty log could not restart from the remote tail", "topic", st.Topic,
		"partition", st.Partition, "leader_epoch", st.LeaderEpoch, "err", err)
	time.AfterFunc(leaderTailRetry, r.reconcileSoon)
	return false
}

// restartFromRemoteTail resets rep's empty log to the end of the last
// finished remote segment (the highest end, then the highest leader
// epoch), with its epoch history and producer snapshot; nothing to do
// when the partition has no finished remote segment.
func (r *Manager) restartFromRemoteTail(rep *partition.Replica, st controlplane.PartitionState, tier *remoteTier) error {
	ctx, cancel := context.WithTimeout(context.Background(), leaderTailTimeout)
	defer cancel()
	var segs []controlplane.RemoteSegment
	if f, ok := tier.meta.(freshRemoteSegments); ok {
		var err error
		if segs, err = f.FreshRemoteSegments(ctx, st.TopicID, st.Partition); err != nil {
			return err
		}
	} else {
		segs = tier.meta.ListRemoteSegments(st.TopicID, st.Partition)
	}
	var last *controlplane.RemoteSegment
	logStart := int64(-1)
	for i, s := range segs {
		if s.State != controlplane.CopyFinished {
			continue
		}
		if logStart < 0 || s.BaseOffset < logStart {
			logStart = s.BaseOffset
		}
		if last == nil || s.EndOffset > last.EndOffset || (s.EndOffset == last.EndOffset && s.LeaderEpoch > last.LeaderEpoch) {
			last = &segs[i]
		}
	}
	if last == nil {
		return nil
	}
	tail, err := readRemoteTail(ctx, tier.bucket, *last)
	if err != nil {
		return err
	}
	tail.LogStart = logStart
	if err := rep.ResetFromRemote(tail); err != nil {
		return fmt.Errorf("restarting at %d: %w", tail.Offset, err)
	}
	r.logger.Info("empty leader log restarted from the remote tail", "topic", st.Topic, "partition", st.Partition,
		"offset", tail.Offset, "log_start", logStart, "remote_segment", last.SegmentID, "epochs", len(tail.Epochs),
		"snapshot_bytes", len(tail.ProducerSnapshot))
	return nil
}
