package partition

import (
	"slices"
	"time"
)

// FollowerView is what a leader knows of one in-sync follower from its
// fetches, for choosing a consumer's preferred read replica (KIP-392,
// Kafka's ReplicaView).
type FollowerView struct {
	ID int32
	// LogEnd is the follower's log end offset (its last fetch offset).
	LogEnd int64
	// LogStart is the log start its last fetch carried; -1 unknown.
	LogStart int64
	// LastCaughtUp is the last time it had everything the leader had.
	LastCaughtUp time.Time
}

// InSyncFollowers returns, on the leader, the followers in the committed
// ISR that have fetched in this leader's term, in ISR order: a follower
// not yet heard from, or out of the ISR, may lag without bound and is no
// place to send a consumer (Kafka's findPreferredReadReplica). It returns
// ErrNotLeader on a replica that does not lead. The caller owns the slice.
func (r *Replica) InSyncFollowers() ([]FollowerView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.leader {
		return nil, ErrNotLeader
	}
	var out []FollowerView
	for _, id := range r.mu.isr {
		if id == r.mu.self {
			continue
		}
		f, ok := r.mu.followers[id]
		if !ok || f.lastFetch.IsZero() || !slices.Contains(r.mu.replicas, id) {
			continue
		}
		out = append(out, FollowerView{ID: id, LogEnd: f.leo, LogStart: f.logStart, LastCaughtUp: f.caughtUp(r.log.LogEndOffset())})
	}
	return out, nil
}
