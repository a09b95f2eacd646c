package partition

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The replica's replication state as one snapshot, for operators' status
// views (the broker's /v1/replication/status).

// FollowerStatus is what a leader knows of one follower, from its fetches
// since this replica became leader.
type FollowerStatus struct {
	ID int32
	// Heard reports whether the follower has fetched since this replica
	// became leader; the other fields are meaningful only when it has.
	Heard bool
	// LogEndOffset is the follower's log end offset, as its last fetch
	// offset (capped at the leader's log end then).
	LogEndOffset int64
	// LastFetch is when it last fetched; LastCaughtUp the last time it had
	// everything the leader had: for an ISR member, at least the time this
	// replica became leader (Kafka's makeLeader); zero if never.
	LastFetch    time.Time
	LastCaughtUp time.Time
}

// Status is a replica's replication state. Replicas and ISR are those the
// control plane last set (SetAssignment); Self is -1 before any assignment.
// The caller owns the slices.
type Status struct {
	Leader      bool
	LeaderEpoch int32
	Self        int32
	// LeaderSince is when this replica last became leader (or opened).
	LeaderSince time.Time
	// LogStartOffset is the first offset retained anywhere (remote or
	// local); LocalLogStartOffset the first on this node's disk.
	LogStartOffset      int64
	LocalLogStartOffset int64
	LogEndOffset        int64
	HighWatermark       int64
	Replicas            []int32
	ISR                 []int32
	// Followers is, on a leader, one entry per assigned replica other than
	// Self (and any follower heard from before an assignment), sorted by
	// id. Empty on a follower.
	Followers []FollowerStatus
}

// Status returns a snapshot of the replica's role, offsets, assignment and,
// on a leader, each follower's progress. The role, epoch, high watermark,
// log end offset, assignment and follower states are read under r.mu
// together, so they agree with each other as the replication code saw
// them; the log start offsets are read just before. Safe for concurrent
// use.
func (r *Replica) Status() Status {
	// LogStartOffset takes r.remote; read it before r.mu, never under it.
	st := Status{LogStartOffset: r.LogStartOffset(), LocalLogStartOffset: r.log.LogStartOffset()}
	r.mu.Lock()
	defer r.mu.Unlock()
	st.Leader, st.LeaderEpoch, st.Self, st.LeaderSince = r.mu.leader, r.mu.leaderEpoch, r.mu.self, r.mu.leaderAt
	st.HighWatermark = r.mu.hw
	st.LogEndOffset = r.log.LogEndOffset()
	st.Replicas, st.ISR = slices.Clone(r.mu.replicas), slices.Clone(r.mu.isr)
	if !r.mu.leader {
		return st
	}
	ids := map[int32]bool{}
	for _, id := range r.mu.replicas {
		if id != r.mu.self {
			ids[id] = true
		}
	}
	for id := range r.mu.followers {
		ids[id] = true
	}
	for id := range ids {
		fs := FollowerStatus{ID: id, LogEndOffset: -1}
		if f, ok := r.mu.followers[id]; ok {
			fs.Heard, fs.LogEndOffset, fs.LastFetch, fs.LastCaughtUp = true, f.leo, f.fetchedAt(), f.caughtUp(r.log.LogEndOffset())
		}
		st.Followers = append(st.Followers, fs)
	}
	slices.SortFunc(st.Followers, func(a, b FollowerStatus) int { return cmp.Compare(a.ID, b.ID) })
	return st
}

// DescribeCommitWait says, for a log line or an error message, why offset
// is not committed yet as of now: the replica's role, high watermark, log
// end and ISR, and for each follower its log end offset and last fetch, or
// that it has not fetched since this replica became leader. Safe for
// concurrent use.
func (r *Replica) DescribeCommitWait(offset int64, now time.Time) string {
	st := r.Status()
	var b strings.Builder
	fmt.Fprintf(&b, "offset %d: high watermark %d, log end %d, leader %v in epoch %d, ISR %v",
		offset, st.HighWatermark, st.LogEndOffset, st.Leader, st.LeaderEpoch, st.ISR)
	for _, f := range st.Followers {
		in := "out of the ISR"
		if slices.Contains(st.ISR, f.ID) {
			in = "in the ISR"
		}
		if !f.Heard {
			fmt.Fprintf(&b, "; follower %d (%s): no fetch in the %v since this replica became leader", f.ID, in, now.Sub(st.LeaderSince).Round(time.Millisecond))
			continue
		}
		fmt.Fprintf(&b, "; follower %d (%s): log end %d, last fetch %v ago", f.ID, in, f.LogEndOffset, now.Sub(f.LastFetch).Round(time.Millisecond))
	}
	return b.String()
}
