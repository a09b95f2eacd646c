package adminapi

// The body of GET /v1/replication/status, behind `shale replication status`
// and sdk.Admin.ReplicationStatus.

import (
	"fmt"
	"slices"
)

// ReplicationStatusPath is the admin HTTP path of a node's replication
// status; ?topic=T restricts its replicas to one topic.
const ReplicationStatusPath = "/v1/replication/status"

// Roles of a replica in the replication status
// (PartitionReplicationStatus.Role).
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// FollowerReplicationStatus is what a partition's leader knows of one
// follower, from the follower's fetches since the leader's term began.
type FollowerReplicationStatus struct {
	// ID is the follower's node id.
	ID int32 `json:"id"`
	// LogEndOffset is the follower's log end offset (its last fetch
	// offset); -1 when it has not fetched in this leader's term.
	LogEndOffset int64 `json:"log_end_offset"`
	// LagRecords is the leader's log end offset minus the follower's, at
	// least 0; -1 when the follower has not fetched.
	LagRecords int64 `json:"lag_records"`
	// InISR reports whether the follower is in the partition's ISR.
	InISR bool `json:"in_isr"`
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

// PartitionReplicationStatus is one local replica's line of a node's
// replication status.
type PartitionReplicationStatus struct {
	// Topic and Partition name the partition.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Role is RoleLeader or RoleFollower, as this replica acts now.
	Role string `json:"role"`
	// LeaderEpoch is the leader epoch this replica is in.
	LeaderEpoch int32 `json:"leader_epoch"`
	// Leader is the partition's leader: the node itself on a leader, the
	// control plane's leader on a follower; -1 when unknown (offline).
	Leader int32 `json:"leader"`
	// LogStartOffset is the first offset retained anywhere (remote or
	// local), LocalLogStartOffset the first on the node's disk.
	LogStartOffset      int64 `json:"log_start_offset"`
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	// LogEndOffset and HighWatermark are this replica's log end offset and
	// high watermark.
	LogEndOffset  int64 `json:"log_end_offset"`
	HighWatermark int64 `json:"high_watermark"`
	// Replicas and ISR are the assignment as the control plane last gave
	// it to this replica; never null.
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	// UnderReplicated: the ISR is smaller than the replica set.
	UnderReplicated bool `json:"under_replicated"`
	// Followers is, on a leader, every other assigned replica, by id;
	// absent on a follower.
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
	return p.UnderReplicated || slices.ContainsFunc(p.Followers, func(f FollowerReplicationStatus) bool { return f.Lagging(maxLag) })
}

// FetcherReplicationStatus is one of a node's replica fetchers.
type FetcherReplicationStatus struct {
	// Leader is the node it fetches from, Index its index among the
	// fetchers to that node (0 .. num.replica.fetchers-1).
	Leader int32 `json:"leader"`
	Index  int   `json:"index"`
	// Partitions are the partitions it fetches, as "topic-partition",
	// sorted.
	Partitions []string `json:"partitions"`
	// Fetches counts the Fetch requests it has sent.
	Fetches uint64 `json:"fetches"`
	// MaxWaitMs, MinBytes, MaxBytes and PartitionMaxBytes are the settings
	// of the last Fetch request sent, as on the wire (0 before the first).
	MaxWaitMs         int32 `json:"max_wait_ms"`
	MinBytes          int32 `json:"min_bytes"`
	MaxBytes          int32 `json:"max_bytes"`
	PartitionMaxBytes int32 `json:"partition_max_bytes"`
	// ConsecutiveFailures counts its failed Fetch requests since the last
	// answered one (and the logins the leader refused: a wrong
	// inter-broker password or an untrusted certificate), Error is the
	// last failure's error; both left out while it fetches.
	ConsecutiveFailures int    `json:"consecutive_failures,omitempty"`
	Error               string `json:"error,omitempty"`
}

// ReplicationStatus is the body of GET /v1/replication/status: one node's
// replication status.
type ReplicationStatus struct {
	// NodeID is the answering node's id.
	NodeID int32 `json:"node_id"`
	// Partitions are the node's local replicas (of the requested topic
	// only, with ?topic=T), sorted by topic and partition; never null.
	Partitions []PartitionReplicationStatus `json:"partitions"`
	// Fetchers are all of the node's replica fetchers, whatever the topic
	// (a fetcher serves several); never null.
	Fetchers []FetcherReplicationStatus `json:"fetchers"`
}

// validate reports a body that decoded but is no replication status: one
// without a partitions list (the server always sends one), or with a
// replica whose role is neither RoleLeader nor RoleFollower.
func (s ReplicationStatus) validate() error {
	if s.Partitions == nil {
		return errNoPartitions
	}
	for _, p := range s.Partitions {
		if p.Role != RoleLeader && p.Role != RoleFollower {
			return fmt.Errorf("%s-%d has role %q", p.Topic, p.Partition, p.Role)
		}
	}
	return nil
}
