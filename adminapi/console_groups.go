package adminapi

// The console's groups: every group of the cluster, consumer (classic and
// KIP-848) and KIP-932 share groups alike, whichever node coordinates it.
// The answering node asks the cluster over Kafka (ListGroups of every
// broker, then, for the groups of one page only, DescribeGroups,
// OffsetFetch and ListOffsets, or ShareGroupDescribe and
// DescribeShareGroupOffsets), with its inter-broker identity; a group's
// lag over time is the coordinator's own samples, given only by the
// coordinator (HistoryNode says which node that is).

// The console's group paths.
const (
	// ConsoleGroupsPath: a page of the cluster's groups, by name
	// (?limit=N&cursor=NAME).
	ConsoleGroupsPath = "/v1/console/groups"
	// ConsoleGroupPath: one group and a page of its partitions
	// (?group=G&limit=N&cursor=TOPIC/PARTITION).
	ConsoleGroupPath = "/v1/console/group"
)

// ConsoleGroups is the body of GET ConsoleGroupsPath.
type ConsoleGroups struct {
	NodeID int32 `json:"node_id"`
	// Total counts the groups every broker listed; Next is the cursor
	// of the next page, "" on the last.
	Total  int            `json:"total"`
	Next   string         `json:"next"`
	Groups []ConsoleGroup `json:"groups"`
	// ListErrors names the brokers whose ListGroups failed: their groups
	// are missing from the list.
	ListErrors []string `json:"list_errors,omitempty"`
}

// ConsoleGroup is one group's line.
type ConsoleGroup struct {
	Group string `json:"group"`
	// Type is "classic", "consumer" (KIP-848) or "share" (KIP-932).
	Type         string `json:"type"`
	ProtocolType string `json:"protocol_type"`
	State        string `json:"state"`
	// Coordinator is the node that coordinates the group.
	Coordinator int32 `json:"coordinator"`
	Members     int   `json:"members"`
	// Partitions counts the partitions the group has an offset on (a
	// committed offset, or a share-partition's state).
	Partitions int `json:"partitions"`
	// Lag sums the partitions' known lag: for a consumer group the high
	// watermark less the committed offset; for a share group the records
	// at or above the share-partition start offset neither acknowledged
	// nor archived (DescribeShareGroupOffsets' lag). LagUnknown counts
	// the partitions whose lag is not known (a share-partition whose lag
	// only its leader knows: see ConsoleGroupPartition.Lag).
	Lag        int64 `json:"lag"`
	LagUnknown int   `json:"lag_unknown"`
	// HistoryNode is the node whose samples hold the group's lag over
	// time (its coordinator; consumer_lag_sample_interval), -1 for none
	// (a share group: not sampled). History is its samples, oldest first,
	// only when the answering node is that node.
	HistoryNode int32      `json:"history_node"`
	History     []LagPoint `json:"history,omitempty"`
	// Error is why the group's members or lag could not be read.
	Error string `json:"error,omitempty"`
}

// ConsoleGroupDetail is the body of GET ConsoleGroupPath.
type ConsoleGroupDetail struct {
	NodeID int32        `json:"node_id"`
	Group  ConsoleGroup `json:"group"`
	// Partitions is a page of the group's partitions, by topic and
	// partition; Next is the cursor of the next page ("TOPIC/PARTITION"),
	// "" on the last.
	Partitions []ConsoleGroupPartition `json:"partitions"`
	Next       string                  `json:"next"`
	// Topics are the topics the group has offsets on (the reset form's).
	Topics []string `json:"topics"`
}

// ConsoleGroupPartition is one partition of a group.
type ConsoleGroupPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the committed offset (a share group: the share-partition
	// start offset), -1 when none.
	Offset int64 `json:"offset"`
	// End is the partition's high watermark, -1 when not known.
	End int64 `json:"end_offset"`
	// Lag: see ConsoleGroup.Lag; -1 when not known. A share-partition's
	// lag is known to the node that leads it: DescribeShareGroupOffsets
	// answers it where the coordinator leads the partition, and the
	// answering node adds those it leads itself.
	Lag int64 `json:"lag"`
	// TimeLagSeconds is the age of the oldest record not consumed, from
	// the coordinator's last sample: -1 when not known (a share group, or
	// a group another node coordinates).
	TimeLagSeconds float64 `json:"time_lag_seconds"`
	// InFlight, Acquired and Available are a share-partition's records in
	// flight (SharePartition), present when the answering node leads it.
	InFlight  *int `json:"in_flight,omitempty"`
	Acquired  *int `json:"acquired,omitempty"`
	Available *int `json:"available,omitempty"`
}
