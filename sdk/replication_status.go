package sdk

import (
	"context"

	"github.com/shale-io/shale/adminapi"
)

// ReplicationStatusPath is the admin HTTP path of a node's replication
// status.
const ReplicationStatusPath = adminapi.ReplicationStatusPath

// Roles of a replica in ReplicationStatus.
const (
	RoleLeader   = adminapi.RoleLeader
	RoleFollower = adminapi.RoleFollower
)

// ReplicationStatus is one node's replication status: its local replicas
// (PartitionReplicationStatus), with each follower as their leader sees it
// (FollowerReplicationStatus), and its replica fetchers
// (FetcherReplicationStatus). They are the JSON of the node's
// /v1/replication/status, documented field by field in package adminapi.
type (
	ReplicationStatus          = adminapi.ReplicationStatus
	PartitionReplicationStatus = adminapi.PartitionReplicationStatus
	FollowerReplicationStatus  = adminapi.FollowerReplicationStatus
	FetcherReplicationStatus   = adminapi.FetcherReplicationStatus
)

// ReplicationStatus reads the replication status of the node at
// WithAdminURL, its replicas restricted to topic unless topic is "". A node
// reports only the replicas it holds: ask each node for the whole cluster.
// A status other than 200 is an ErrAdminHTTP; a body that is not a
// replication status (no partitions list, an unknown role) is an error too.
func (a *Admin) ReplicationStatus(ctx context.Context, topic string) (ReplicationStatus, error) {
	return adminGet(ctx, a, "replication status", topic, adminapi.Client.ReplicationStatus)
}
