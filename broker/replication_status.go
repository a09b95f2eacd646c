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

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
)

// ReplicationStatusPath is the admin HTTP path of the replication status
// (adminapi.ReplicationStatusPath).
const ReplicationStatusPath = adminapi.ReplicationStatusPath

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
	fetchers []replica.FetcherStatus, topic string, now time.Time) adminapi.ReplicationStatus {
	type fetcherAt struct {
		leader int32
		index  int
	}
	fetching := map[string]fetcherAt{}
	out := adminapi.ReplicationStatus{NodeID: node, Partitions: []adminapi.PartitionReplicationStatus{}, Fetchers: []adminapi.FetcherReplicationStatus{}}
	for _, f := range fetchers {
		for _, p := range f.Partitions {
			fetching[p] = fetcherAt{f.Leader, f.Index}
		}
		out.Fetchers = append(out.Fetchers, adminapi.FetcherReplicationStatus{Leader: f.Leader, Index: f.Index,
			Partitions: append([]string{}, f.Partitions...), Fetches: f.Fetches, MaxWaitMs: f.MaxWaitMillis,
			MinBytes: f.MinBytes, MaxBytes: f.MaxBytes, PartitionMaxBytes: f.PartitionMaxBytes,
			ConsecutiveFailures: f.Failures, Error: f.Error})
	}
	for _, rep := range reps {
		if topic != "" && rep.Topic() != topic {
			continue
		}
		s := rep.Status()
		ps := adminapi.PartitionReplicationStatus{Topic: rep.Topic(), Partition: rep.Partition(), Role: adminapi.RoleFollower,
			LeaderEpoch: s.LeaderEpoch, Leader: -1, LogStartOffset: s.LogStartOffset, LocalLogStartOffset: s.LocalLogStartOffset,
			LogEndOffset: s.LogEndOffset, HighWatermark: s.HighWatermark, Replicas: nonNil(s.Replicas), ISR: nonNil(s.ISR),
			UnderReplicated: len(s.ISR) < len(s.Replicas), FetchingFrom: -1, FetcherIndex: -1}
		if s.Leader {
			ps.Role, ps.Leader = adminapi.RoleLeader, node
			for _, f := range s.Followers {
				fs := adminapi.FollowerReplicationStatus{ID: f.ID, LogEndOffset: -1, LagRecords: -1, InISR: slices.Contains(s.ISR, f.ID),
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
	slices.SortFunc(out.Partitions, func(a, b adminapi.PartitionReplicationStatus) int {
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
