package adminapi

// The console's session and its safe actions. The actions change the
// cluster, so they are POSTs: the admin listener serves them to an admin
// token or client certificate only, and refuses them from another origin.
// The node runs each as a Kafka admin client would (ElectLeaders,
// AlterPartitionReassignments, OffsetCommit), as itself: a client of its
// own inter-broker listener with its inter-broker identity.
const (
	// ConsoleSessionPath: GET, the caller's role (ConsoleSession).
	ConsoleSessionPath = "/v1/console/session"
	// ConsoleElectPreferredPath: POST ConsoleElectRequest, a preferred
	// leader election (ConsoleElectResult).
	ConsoleElectPreferredPath = "/v1/console/elect-preferred"
	// ConsoleRebalancePath: POST ConsoleRebalanceRequest, the balancer's
	// plan as the operator saw it in its dry run (BalancePath), submitted
	// (ConsoleRebalanceResult).
	ConsoleRebalancePath = "/v1/console/rebalance"
	// ConsoleResetOffsetsPath: POST ConsoleResetRequest, a group's offset
	// reset, planned (dry run) or committed (ConsoleResetResult).
	ConsoleResetOffsetsPath = "/v1/console/reset-offsets"
)

// ConsoleSession is the body of GET ConsoleSessionPath.
type ConsoleSession struct {
	NodeID int32 `json:"node_id"`
	// Role is the caller's: "admin" (tokens of role admin, a verified
	// client certificate, or a listener without authentication) or
	// "read" (a read-only token).
	Role string `json:"role"`
	// CanWrite: the role may run the actions.
	CanWrite bool `json:"can_write"`
}

// ConsoleElectRequest asks for a preferred leader election of Topic's
// Partitions (every partition of Topic when empty).
type ConsoleElectRequest struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions,omitempty"`
}

// ConsoleElectResult is each partition's outcome, by partition.
type ConsoleElectResult struct {
	Results []ConsoleElection `json:"results"`
}

// ConsoleElection is one partition's outcome: Error is "" when leadership
// moved to the preferred replica, else the broker's error (for example
// ELECTION_NOT_NEEDED when it already leads).
type ConsoleElection struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

// ConsoleRebalanceRequest submits the reassignments of the balancer's
// plan. Moves are those the operator was shown (the dry run's replica
// moves with their targets) and MaxMoves the limit that plan was made
// with (0: the node's balancer_max_moves). The node plans again and
// submits only when its plan's reassignments are the same; else it
// answers 409 and the operator reviews the new plan.
type ConsoleRebalanceRequest struct {
	MaxMoves int                   `json:"max_moves,omitempty"`
	Moves    []ConsoleReassignment `json:"moves"`
}

// ConsoleReassignment is one partition's new replica list.
type ConsoleReassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Target    []int32 `json:"target"`
	// Error is the broker's refusal of this partition, in a result.
	Error string `json:"error,omitempty"`
}

// ConsoleRebalanceResult lists the reassignments submitted, each with the
// broker's error when it refused it.
type ConsoleRebalanceResult struct {
	Submitted []ConsoleReassignment `json:"submitted"`
}

// ConsoleResetRequest resets Group's committed offsets (a share group's
// share-partition start offsets) on Topic's
// Partitions (all of them when empty) to To: "earliest", "latest",
// "offset" (Offset, clamped to the partition's range) or "timestamp" (the
// first offset at or after Timestamp, Unix milliseconds). DryRun plans
// only. The group must have no members (409 with the broker's state).
type ConsoleResetRequest struct {
	Group      string  `json:"group"`
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions,omitempty"`
	To         string  `json:"to"`
	Offset     int64   `json:"offset,omitempty"`
	Timestamp  int64   `json:"timestamp,omitempty"`
	DryRun     bool    `json:"dry_run,omitempty"`
}

// ConsoleResetResult is the plan, committed unless DryRun.
type ConsoleResetResult struct {
	Group string `json:"group"`
	// Type is "share" for a KIP-932 share group (its share-partition
	// start offsets, moved by AlterShareGroupOffsets), else "consumer"
	// (committed offsets, OffsetCommit).
	Type       string               `json:"type"`
	DryRun     bool                 `json:"dry_run"`
	Partitions []ConsoleOffsetReset `json:"partitions"`
}

// ConsoleOffsetReset is one partition's move: OldOffset -1 when nothing
// was committed (a share-partition without a state).
type ConsoleOffsetReset struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	OldOffset    int64  `json:"old_offset"`
	NewOffset    int64  `json:"new_offset"`
	LogEndOffset int64  `json:"log_end_offset"`
	Lag          int64  `json:"lag"`
}
