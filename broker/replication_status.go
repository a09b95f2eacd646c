package broker

// The admin endpoint behind `shale replication status`: every local
// replica's role, offsets and assignment, each follower's progress as its
// leader sees it, and the node's replica fetchers.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/shale-io/shale/partition"
)

// ReplicationStatusPath is the admin HTTP path of the replication status;
// ?topic=T restricts it to one topic.
const ReplicationStatusPath = "/v1/replication/status"

// Roles of a replica in the replication status.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// FollowerReplicationStatus is what a leader knows of one follower, from
// the follower's fetches since this leader's term began.
type FollowerReplicationStatus struct {
	ID int32 `json:"id"`
	// LogEndOffset is the follower's log end offset (its last fetch
	// offset); -1 when it has not fetched in this leader's term.
	LogEndOffset int64 `json:"log_end_offset"`
	// LagRecords is the leader's log end offset minus the follower's; -1
	// when the follower has not fetched.
	LagRecords int64 `json:"lag_records"`
	InISR      bool  `json:"in_isr"`
	// LastFetchMsAgo and LastCaughtUpMsAgo are the milliseconds since the
	// follower last fetched and last had everything the leader had (what
	// replica.lag.time.max.ms is measured against); -1 for never.
	LastFetchMsAgo    int64 `json:"last_fetch_ms_ago"`
	LastCaughtUpMsAgo int64 `json:"last_caught_up_ms_ago"`
}

// Lagging reports whether the follower has not fetched in this leader's
// term or is more than maxLag records behind the leader.
func (f FollowerReplicationStatus) Lagging(maxLag int64) bool {
	return f.LogEndOffset < 0 || f.LagRecords > maxLag
}

// PartitionReplicationStatus is one local replica's line of the
// replication status.
type PartitionReplicationStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Role is RoleLeader or RoleFollower, as this replica acts now.
	Role        string `json:"role"`
	LeaderEpoch int32  `json:"leader_epoch"`
	// Leader is the partition's leader: this node on a leader, the control
	// plane's leader on a follower; -1 when unknown (offline).
	Leader int32 `json:"leader"`
	// LogStartOffset is the first offset retained anywhere (remote or
	// local), LocalLogStartOffset the first on this node's disk.
	LogStartOffset      int64 `json:"log_start_offset"`
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	LogEndOffset        int64 `json:"log_end_offset"`
	HighWatermark       int64 `json:"high_watermark"`
	// Replicas and ISR are the assignment as the control plane last gave
	// it to this replica.
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	// UnderReplicated: the ISR is smaller than the replica set.
	UnderReplicated bool `json:"under_replicated"`
	// Followers is, on a leader, every other assigned replica, by id.
	Followers []FollowerReplicationStatus `json:"followers,omitempty"`
	// FetchingFrom is, on a follower, the node its replica fetcher fetches
	// from, and FetcherIndex that fetcher's index; -1 on a leader or when no
	// fetcher holds the partition (its leader is not registered).
	FetchingFrom int32 `json:"fetching_from"`
	FetcherIndex int   `json:"fetcher_index"`
}

// UnderReplicatedOrLagging reports whether the partition's ISR is smaller
// than its replica set, or (seen from its leader) a follower is lagging by
// more than maxLag records (FollowerReplicationStatus.Lagging).
func (p PartitionReplicationStatus) UnderReplicatedOrLagging(maxLag int64) bool {
	if p.UnderReplicated {
		return true
	}
	return slices.ContainsFunc(p.Followers, func(f FollowerReplicationStatus) bool { return f.Lagging(maxLag) })
}

// FetcherReplicationStatus is one of the node's replica fetchers
// (ReplicaFetcherStatus, as JSON).
type FetcherReplicationStatus struct {
	Leader     int32    `json:"leader"`
	Index      int      `json:"index"`
	Partitions []string `json:"partitions"` // "topic-partition", sorted
	Fetches    uint64   `json:"fetches"`
	// The settings of the last Fetch request sent, as on the wire (0
	// before the first).
	MaxWaitMs         int32 `json:"max_wait_ms"`
	MinBytes          int32 `json:"min_bytes"`
	MaxBytes          int32 `json:"max_bytes"`
	PartitionMaxBytes int32 `json:"partition_max_bytes"`
}

// ReplicationStatus is the body of GET /v1/replication/status.
type ReplicationStatus struct {
	NodeID     int32                        `json:"node_id"`
	Partitions []PartitionReplicationStatus `json:"partitions"`
	Fetchers   []FetcherReplicationStatus   `json:"fetchers"`
}

// replicationStatusHandler serves ReplicationStatusPath from this node's
// replicas, the control plane's view of leaders and the replica fetchers.
func (n *Node) replicationStatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		if n.replicas == nil || n.store == nil {
			http.Error(w, "node starting", http.StatusServiceUnavailable)
			return
		}
		leaderOf := func(topic string, p int32) int32 {
			if st, ok := n.store.Partition(topic, p); ok {
				return st.Leader
			}
			return -1
		}
		st := replicationStatusOf(n.cfg.NodeID, n.replicas.All(), leaderOf, n.ReplicaFetchers(), r.URL.Query().Get("topic"), time.Now())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
}

// replicationStatusOf computes the status of reps (those of topic only,
// unless topic is ""), sorted by topic and partition, and of fetchers (all
// of them: a fetcher serves several topics). leaderOf gives the control
// plane's leader of a partition (-1 unknown); now is the clock for the
// "ms ago" fields.
func replicationStatusOf(node int32, reps []*partition.Replica, leaderOf func(string, int32) int32,
	fetchers []ReplicaFetcherStatus, topic string, now time.Time) ReplicationStatus {
	type fetcherAt struct {
		leader int32
		index  int
	}
	fetching := map[string]fetcherAt{}
	out := ReplicationStatus{NodeID: node, Partitions: []PartitionReplicationStatus{}, Fetchers: []FetcherReplicationStatus{}}
	for _, f := range fetchers {
		for _, p := range f.Partitions {
			fetching[p] = fetcherAt{f.Leader, f.Index}
		}
		out.Fetchers = append(out.Fetchers, FetcherReplicationStatus{Leader: f.Leader, Index: f.Index,
			Partitions: append([]string{}, f.Partitions...), Fetches: f.Fetches, MaxWaitMs: f.MaxWaitMillis,
			MinBytes: f.MinBytes, MaxBytes: f.MaxBytes, PartitionMaxBytes: f.PartitionMaxBytes})
	}
	for _, rep := range reps {
		if topic != "" && rep.Topic() != topic {
			continue
		}
		s := rep.Status()
		ps := PartitionReplicationStatus{Topic: rep.Topic(), Partition: rep.Partition(), Role: RoleFollower,
			LeaderEpoch: s.LeaderEpoch, Leader: -1, LogStartOffset: s.LogStartOffset, LocalLogStartOffset: s.LocalLogStartOffset,
			LogEndOffset: s.LogEndOffset, HighWatermark: s.HighWatermark, Replicas: nonNil(s.Replicas), ISR: nonNil(s.ISR),
			UnderReplicated: len(s.ISR) < len(s.Replicas), FetchingFrom: -1, FetcherIndex: -1}
		if s.Leader {
			ps.Role, ps.Leader = RoleLeader, node
			for _, f := range s.Followers {
				fs := FollowerReplicationStatus{ID: f.ID, LogEndOffset: -1, LagRecords: -1, InISR: slices.Contains(s.ISR, f.ID),
					LastFetchMsAgo: msAgo(now, f.LastFetch), LastCaughtUpMsAgo: msAgo(now, f.LastCaughtUp)}
				if f.Heard {
					fs.LogEndOffset, fs.LagRecords = f.LogEndOffset, max(s.LogEndOffset-f.LogEndOffset, 0)
				}
				ps.Followers = append(ps.Followers, fs)
			}
		} else {
			if leaderOf != nil {
				ps.Leader = leaderOf(rep.Topic(), rep.Partition())
			}
			if at, ok := fetching[fmt.Sprintf("%s-%d", rep.Topic(), rep.Partition())]; ok {
				ps.FetchingFrom, ps.FetcherIndex = at.leader, at.index
			}
		}
		out.Partitions = append(out.Partitions, ps)
	}
	slices.SortFunc(out.Partitions, func(a, b PartitionReplicationStatus) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// msAgo is the whole milliseconds from t to now, at least 0; -1 for a zero t.
func msAgo(now, t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return max(now.Sub(t).Milliseconds(), 0)
}

// nonNil returns xs, or an empty slice for nil (JSON [] rather than null).
func nonNil(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}
