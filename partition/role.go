package partition

import (
	"errors"

	"github.com/shale-io/shale/segment"
)

// SetLeadership makes the replica the partition's leader at epoch, or a
// follower. A follower refuses produce (ErrNotLeader) and is not served to
// consumers. The control plane decides; the broker applies its decisions
// here, and the epoch is stamped into every batch the leader appends. It
// reports whether anything changed.
//
// A leader records its epoch in the log's epoch history at once, starting
// at its log end offset, as Kafka's Partition.makeLeader does
// (segment.Log.AssignEpoch), whenever the epoch is newer than the
// history's latest: on a new term, and also when the role itself does not
// change (a replica reopened at the epoch it led in, whose reopened log
// dropped the unwritten entry). It is done under the append lock, before
// the new epoch is installed, so no append of the old epoch lands after
// the new epoch's start: AppendLeader reads the epoch again under that
// lock, and AppendFollower refuses a leader (Kafka stops the follower's
// fetcher before makeLeader; here the broker stops it after). A replica
// whose history cannot be written does not lead: it becomes a follower at
// epoch, logs the error, and takes the role when the broker applies it
// again.
func (r *Replica) SetLeadership(leader bool, epoch int32) bool {
	if leader {
		// Under appendMu, so that a follower append still in flight (the
		// fetcher is stopped after this call) lands before the new epoch's
		// start, and none lands after (AppendFollower refuses a leader).
		r.appendMu.Lock()
		defer r.appendMu.Unlock()
	}
	if leader && r.log.LatestEpoch() < epoch {
		if _, err := r.log.AssignEpoch(epoch); err != nil {
			if !errors.Is(err, segment.ErrClosed) {
				r.logger.Error("cannot record the leader epoch; not leading", "leader_epoch", epoch,
					"log_end", r.log.LogEndOffset(), "err", err)
			}
			leader = false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.leader == leader && r.mu.leaderEpoch == epoch {
		return false
	}
	if leader && (!r.mu.leader || r.mu.leaderEpoch != epoch) {
		// A new term: follower progress is learnt afresh from their fetches.
		r.mu.leaderAt = r.now()
		r.mu.followers = map[int32]*followerState{}
	}
	r.mu.pendingISR = nil // a proposal of the old term is fenced by its epoch
	r.mu.leader, r.mu.leaderEpoch = leader, epoch
	replicaChanges.Add(1)
	// The HW moves now if the ISR allows (Kafka's makeLeader:
	// maybeIncrementLeaderHW): with this replica alone in an ISR that
	// meets min.insync.replicas, it is its log end.
	r.maybeAdvanceHWLocked()
	close(r.mu.leoChanged)
	r.mu.leoChanged = make(chan struct{})
	// Wake long polls and acks=all waiters: they re-check the role.
	close(r.mu.hwChanged)
	r.mu.hwChanged = make(chan struct{})
	r.notifyWatchers()
	return true
}

// IsLeader reports whether the replica currently leads its partition.
func (r *Replica) IsLeader() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.leader
}
