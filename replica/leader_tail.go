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
//
// The read is asynchronous: a NATS request can take seconds while the
// stream that holds the remote metadata elects a leader, and Reconcile,
// which applies every partition's role, must not wait on one partition's
// read (before, it held every role change of the node for up to 30 s).
// Meanwhile the replica is a follower of the new epoch with no leader to
// fetch from, so it no longer fetches from the leader it replaces (whose
// step-down rule waits for its followers to fall silent: session.go), and
// Reconcile applies the tail once it is read.

// freshRemoteSegments is the optional read of the remote metadata from
// NATS rather than from the watch (controlplane.RemoteLog has it).
type freshRemoteSegments interface {
	FreshRemoteSegments(ctx context.Context, id controlplane.TopicID, p int32) ([]controlplane.RemoteSegment, error)
}

// leaderTailTimeout bounds one attempt to read the remote tail.
const leaderTailTimeout = 10 * time.Second

// leaderTailRetry is when Reconcile runs again after a leader could not
// read its remote tail (the replica stays a follower meanwhile).
const leaderTailRetry = time.Second

// leaderTailReads bounds the remote-tail reads in flight at once (many
// empty partitions can change leader together).
const leaderTailReads = 8

// tailRead is one partition's read of its remote tail for the leader
// epoch it was started at. The reading goroutine sets done, tail and err
// under Manager.mu; Reconcile applies the result and removes the entry.
type tailRead struct {
	topicID controlplane.TopicID
	epoch   int32
	done    bool
	tail    *remoteTailRead // nil: no finished remote segment
	err     error
}

// remoteTailRead is a tail read and where it came from, for the log line.
type remoteTailRead struct {
	tail    partition.RemoteTail
	segment controlplane.RemoteSegment
}

// prepareLeader returns whether rep may lead partition st now: true unless
// its log is empty and the remote tail it must restart from has not been
// read and applied yet (then a read is in flight, or was just logged as
// failed with a Reconcile queued).
// REQUIRES: reconcileMu held; rep is the only caller's for this partition.
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
	k := replicaKey{st.Topic, st.Partition}
	r.mu.Lock()
	tr := r.mu.tailReads[k]
	if tr == nil || tr.topicID != st.TopicID || tr.epoch != st.LeaderEpoch {
		// None yet, or one for another epoch, whose result is dropped.
		tr = &tailRead{topicID: st.TopicID, epoch: st.LeaderEpoch}
		r.mu.tailReads[k] = tr
		r.mu.Unlock()
		r.startTailRead(k, tr, st, tier)
		return false
	}
	if !tr.done {
		r.mu.Unlock()
		return false
	}
	delete(r.mu.tailReads, k)
	r.mu.Unlock()
	err := tr.err
	if err == nil && tr.tail != nil {
		if err = rep.ResetFromRemote(tr.tail.tail); err != nil {
			err = fmt.Errorf("restarting at %d: %w", tr.tail.tail.Offset, err)
		} else {
			r.logger.Info("empty leader log restarted from the remote tail", "topic", st.Topic, "partition", st.Partition,
				"offset", tr.tail.tail.Offset, "log_start", tr.tail.tail.LogStart, "remote_segment", tr.tail.segment.SegmentID,
				"epochs", len(tr.tail.tail.Epochs), "snapshot_bytes", len(tr.tail.tail.ProducerSnapshot))
		}
	}
	if err == nil {
		return true
	}
	r.logger.Warn("not leading yet: the empty log could not restart from the remote tail", "topic", st.Topic,
		"partition", st.Partition, "leader_epoch", st.LeaderEpoch, "err", err)
	time.AfterFunc(leaderTailRetry, r.reconcileSoon)
	return false
}

// startTailRead reads st's remote tail in the background into tr, at most
// leaderTailReads at once, and queues a Reconcile when it is done.
func (r *Manager) startTailRead(k replicaKey, tr *tailRead, st controlplane.PartitionState, tier *remoteTier) {
	r.tailWG.Add(1)
	go func() {
		defer r.tailWG.Done()
		select {
		case r.tailSem <- struct{}{}:
		case <-r.closing:
			return
		}
		read, err := r.readLeaderTail(st, tier)
		<-r.tailSem
		r.mu.Lock()
		tr.done, tr.tail, tr.err = true, read, err
		r.mu.Unlock()
		r.reconcilePartitionSoon(k)
	}()
}

// readLeaderTail reads the state of the data up to the end of the last
// finished remote segment of st (the highest end, then the highest leader
// epoch), with its epoch history and producer snapshot, and the partition's
// remote log start; nil when it has no finished remote segment.
func (r *Manager) readLeaderTail(st controlplane.PartitionState, tier *remoteTier) (*remoteTailRead, error) {
	ctx, cancel := context.WithTimeout(context.Background(), leaderTailTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	var segs []controlplane.RemoteSegment
	if f, ok := tier.meta.(freshRemoteSegments); ok {
		var err error
		if segs, err = f.FreshRemoteSegments(ctx, st.TopicID, st.Partition); err != nil {
			return nil, err
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
		return nil, nil
	}
	tail, err := readRemoteTail(ctx, tier.bucket, *last)
	if err != nil {
		return nil, err
	}
	tail.LogStart = logStart
	return &remoteTailRead{tail: tail, segment: *last}, nil
}
