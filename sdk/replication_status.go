package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ReplicationStatusPath is the admin HTTP path of a node's replication
// status.
const ReplicationStatusPath = "/v1/replication/status"

// Roles of a replica in ReplicationStatus.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// FollowerReplicationStatus is what a partition's leader knows of one
// follower, from the follower's fetches since the leader's term began.
type FollowerReplicationStatus struct {
	ID int32 `json:"id"`
	// LogEndOffset is the follower's log end offset; -1 when it has not
	// fetched in this leader's term.
	LogEndOffset int64 `json:"log_end_offset"`
	// LagRecords is the leader's log end offset minus the follower's; -1
	// when the follower has not fetched.
	LagRecords int64 `json:"lag_records"`
	InISR      bool  `json:"in_isr"`
	// LastFetchMsAgo and LastCaughtUpMsAgo are the milliseconds since the
	// follower last fetched and last had everything the leader had; -1 for
	// never.
	LastFetchMsAgo    int64 `json:"last_fetch_ms_ago"`
	LastCaughtUpMsAgo int64 `json:"last_caught_up_ms_ago"`
}

// Lagging reports whether the follower has not fetched in this leader's
// term or is more than maxLag records behind the leader.
func (f FollowerReplicationStatus) Lagging(maxLag int64) bool {
	return f.LogEndOffset < 0 || f.LagRecords > maxLag
}

// PartitionReplicationStatus is one replica on a node.
type PartitionReplicationStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Role is RoleLeader or RoleFollower.
	Role        string `json:"role"`
	LeaderEpoch int32  `json:"leader_epoch"`
	// Leader is the partition's leader; -1 when unknown (offline).
	Leader int32 `json:"leader"`
	// LogStartOffset is the first offset retained anywhere (remote or
	// local), LocalLogStartOffset the first on the node's disk.
	LogStartOffset      int64   `json:"log_start_offset"`
	LocalLogStartOffset int64   `json:"local_log_start_offset"`
	LogEndOffset        int64   `json:"log_end_offset"`
	HighWatermark       int64   `json:"high_watermark"`
	Replicas            []int32 `json:"replicas"`
	ISR                 []int32 `json:"isr"`
	// UnderReplicated: the ISR is smaller than the replica set.
	UnderReplicated bool `json:"under_replicated"`
	// Followers is, on a leader, every other assigned replica.
	Followers []FollowerReplicationStatus `json:"followers,omitempty"`
	// FetchingFrom is, on a follower, the node it fetches from, and
	// FetcherIndex the index of that replica fetcher; -1 otherwise.
	FetchingFrom int32 `json:"fetching_from"`
	FetcherIndex int   `json:"fetcher_index"`
}

// UnderReplicatedOrLagging reports whether the ISR is smaller than the
// replica set or, seen from the leader, a follower lags by more than maxLag
// records.
func (p PartitionReplicationStatus) UnderReplicatedOrLagging(maxLag int64) bool {
	return p.UnderReplicated || slices.ContainsFunc(p.Followers, func(f FollowerReplicationStatus) bool { return f.Lagging(maxLag) })
}

// FetcherReplicationStatus is one of a node's replica fetchers.
type FetcherReplicationStatus struct {
	Leader     int32    `json:"leader"` // the node it fetches from
	Index      int      `json:"index"`  // 0 .. num.replica.fetchers-1
	Partitions []string `json:"partitions"`
	Fetches    uint64   `json:"fetches"`
	// The settings of the last Fetch request sent (0 before the first).
	MaxWaitMs         int32 `json:"max_wait_ms"`
	MinBytes          int32 `json:"min_bytes"`
	MaxBytes          int32 `json:"max_bytes"`
	PartitionMaxBytes int32 `json:"partition_max_bytes"`
}

// ReplicationStatus is one node's replication status: its local replicas,
// sorted by topic and partition, and its replica fetchers.
type ReplicationStatus struct {
	NodeID     int32                        `json:"node_id"`
	Partitions []PartitionReplicationStatus `json:"partitions"`
	Fetchers   []FetcherReplicationStatus   `json:"fetchers"`
}

// errNotReplicationStatus: the body decoded, but is not a status.
var errNotReplicationStatus = errors.New("not a replication status")

// ReplicationStatus reads the replication status of the node at
// WithAdminURL, its replicas restricted to topic unless topic is "". A node
// reports only the replicas it holds: ask each node for the whole cluster.
func (a *Admin) ReplicationStatus(ctx context.Context, topic string) (ReplicationStatus, error) {
	if a.closed.Load() {
		return ReplicationStatus{}, ErrClosed
	}
	if a.adminURL == "" {
		return ReplicationStatus{}, ErrNoAdminURL
	}
	u := strings.TrimSuffix(a.adminURL, "/") + ReplicationStatusPath
	if topic != "" {
		u += "?topic=" + url.QueryEscape(topic)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ReplicationStatus{}, fmt.Errorf("sdk: replication status: %w", err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return ReplicationStatus{}, fmt.Errorf("sdk: replication status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return ReplicationStatus{}, fmt.Errorf("%w: GET %s: %s: %s", ErrAdminHTTP, u, resp.Status, strings.TrimSpace(string(body)))
	}
	var st ReplicationStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return ReplicationStatus{}, fmt.Errorf("sdk: replication status: decode: %w", err)
	}
	if st.Partitions == nil {
		return ReplicationStatus{}, fmt.Errorf("sdk: replication status: %w: no partitions list", errNotReplicationStatus)
	}
	return st, nil
}
