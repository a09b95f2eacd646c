package adminapi

// The bodies of the web console's endpoints (package console serves the
// pages; the broker answers these from its control-plane cache and its
// local replicas, without asking other nodes). Lists are paged: a request
// names a limit and the cursor the previous page returned, and a page
// never holds more than the limit, whatever the cluster's size.

// The console's JSON paths.
const (
	// ConsoleClusterPath: the nodes, the controller and the replica balance.
	ConsoleClusterPath = "/v1/console/cluster"
	// ConsoleTopicsPath: a page of topics (?limit=N&cursor=NAME&internal=1).
	ConsoleTopicsPath = "/v1/console/topics"
	// ConsoleTopicPath: one topic and a page of its partitions
	// (?topic=T&limit=N&cursor=P).
	ConsoleTopicPath = "/v1/console/topic"
	// ConsoleTierMapPath: one partition's segments, local and remote
	// (?topic=T&partition=P).
	ConsoleTierMapPath = "/v1/console/tiermap"
)

// Page bounds of the console's lists.
const (
	ConsoleDefaultLimit = 50
	ConsoleMaxLimit     = 500
	// ConsoleMaxSegments bounds each of a tier map's segment lists: the
	// newest segments are kept, and the map counts those left out.
	ConsoleMaxSegments = 2000
)

// ConsoleCluster is the body of GET ConsoleClusterPath.
type ConsoleCluster struct {
	// NodeID is the answering node; ClusterID the cluster's id.
	NodeID    int32  `json:"node_id"`
	ClusterID string `json:"cluster_id"`
	// Controller is the node holding the controller lease, -1 when none.
	Controller int32 `json:"controller"`
	// Nodes are the registered brokers, fenced or not, by id; never null.
	Nodes []ConsoleNode `json:"nodes"`
	// Topics and Partitions count the cluster's topics (internal ones
	// included) and partitions; Offline the partitions without a leader
	// and UnderReplicated those whose ISR is smaller than their replicas.
	Topics          int `json:"topics"`
	Partitions      int `json:"partitions"`
	Offline         int `json:"offline"`
	UnderReplicated int `json:"under_replicated"`
	// DrainingErr is set when the draining set could not be read (then
	// every node's Draining is false).
	DrainingErr string `json:"draining_error,omitempty"`
}

// ConsoleNode is one registered broker and its share of the partitions.
type ConsoleNode struct {
	ID      int32  `json:"id"`
	Address string `json:"address"`
	Rack    string `json:"rack"`
	// Live: it has a live session; Fenced: it is registered without one.
	Live   bool `json:"live"`
	Fenced bool `json:"fenced"`
	// Draining: it is being decommissioned. ControlledShutdown: it is
	// stopping cleanly.
	Draining           bool `json:"draining"`
	ControlledShutdown bool `json:"controlled_shutdown"`
	// Replicas, Leaders and Preferred count the partitions with a replica
	// on it, led by it, and whose preferred leader (first replica) it is.
	Replicas  int `json:"replicas"`
	Leaders   int `json:"leaders"`
	Preferred int `json:"preferred"`
}

// ConsoleTopics is the body of GET ConsoleTopicsPath: one page of topics
// sorted by name.
type ConsoleTopics struct {
	NodeID int32 `json:"node_id"`
	// Total counts the topics the listing covers (all pages).
	Total  int            `json:"total"`
	Topics []ConsoleTopic `json:"topics"`
	// Next is the cursor of the next page, "" after the last.
	Next string `json:"next"`
}

// ConsoleTopic is one topic's line. The byte counts are the answering
// node's: LocalBytes sums its local replicas of the topic (LocalPartitions
// of them); RemoteBytes and RemoteSegments are the finished remote
// segments of every partition (the remote segment metadata is cluster-wide).
type ConsoleTopic struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Internal          bool              `json:"internal"`
	Configs           map[string]string `json:"configs"`
	Offline           int               `json:"offline"`
	UnderReplicated   int               `json:"under_replicated"`
	LocalPartitions   int               `json:"local_partitions"`
	LocalBytes        int64             `json:"local_bytes"`
	RemoteSegments    int               `json:"remote_segments"`
	RemoteBytes       int64             `json:"remote_bytes"`
}

// ConsoleTopicDetail is the body of GET ConsoleTopicPath: the topic and one
// page of its partitions, by partition number.
type ConsoleTopicDetail struct {
	NodeID     int32              `json:"node_id"`
	Topic      ConsoleTopic       `json:"topic"`
	Partitions []ConsolePartition `json:"partitions"`
	// Next is the cursor (a partition number) of the next page, -1 after
	// the last.
	Next int32 `json:"next"`
}

// ConsolePartition is one partition's line. The offsets and LocalBytes are
// those of the answering node's replica, -1 when it has none (Local false).
type ConsolePartition struct {
	Partition        int32   `json:"partition"`
	Leader           int32   `json:"leader"`
	LeaderEpoch      int32   `json:"leader_epoch"`
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	ELR              []int32 `json:"elr"`
	AddingReplicas   []int32 `json:"adding_replicas"`
	RemovingReplicas []int32 `json:"removing_replicas"`
	Local            bool    `json:"local"`
	LogStartOffset   int64   `json:"log_start_offset"`
	LocalStartOffset int64   `json:"local_log_start_offset"`
	HighWatermark    int64   `json:"high_watermark"`
	LogEndOffset     int64   `json:"log_end_offset"`
	LocalBytes       int64   `json:"local_bytes"`
	RemoteSegments   int     `json:"remote_segments"`
	RemoteBytes      int64   `json:"remote_bytes"`
}

// ConsoleTierMap is the body of GET ConsoleTierMapPath: where a
// partition's offsets are. Offsets are -1 when unknown; the local ones
// are the answering node's replica's (Local false: it has none, and only
// the remote segments are listed).
type ConsoleTierMap struct {
	NodeID    int32   `json:"node_id"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	Local     bool    `json:"local"`
	// RemoteStorage is the topic's remote.storage.enable.
	RemoteStorage bool `json:"remote_storage"`
	// The edges: the first offset kept anywhere, the first on local disk,
	// the high watermark, the log end, and the last offset in the bucket.
	LogStartOffset      int64 `json:"log_start_offset"`
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	HighWatermark       int64 `json:"high_watermark"`
	LogEndOffset        int64 `json:"log_end_offset"`
	LastTieredOffset    int64 `json:"last_tiered_offset"`
	// Upload lag, as in TierPartitionStatus.
	UploadLagOffsets  int64 `json:"upload_lag_offsets"`
	UploadLagSegments int   `json:"upload_lag_segments"`
	UploadLagBytes    int64 `json:"upload_lag_bytes"`
	// The retention settings in force (Kafka's values: -1 unlimited, -2
	// for the local ones means the same as the total's).
	RetentionMs         int64 `json:"retention_ms"`
	RetentionBytes      int64 `json:"retention_bytes"`
	LocalRetentionMs    int64 `json:"local_retention_ms"`
	LocalRetentionBytes int64 `json:"local_retention_bytes"`
	// LocalSegments and RemoteSegments by base offset, each at most
	// ConsoleMaxSegments (the newest); the Omitted counts say how many
	// older ones were left out. Never null.
	LocalSegments         []ConsoleSegment `json:"local_segments"`
	RemoteSegments        []ConsoleSegment `json:"remote_segments"`
	LocalSegmentsOmitted  int              `json:"local_segments_omitted"`
	RemoteSegmentsOmitted int              `json:"remote_segments_omitted"`
}

// ConsoleSegment is one segment of a tier map. EndOffset is its last
// offset, inclusive (BaseOffset-1 for an empty one); MaxTimestamp is in
// Unix milliseconds, -1 when unknown.
type ConsoleSegment struct {
	BaseOffset   int64 `json:"base_offset"`
	EndOffset    int64 `json:"end_offset"`
	Size         int64 `json:"size"`
	MaxTimestamp int64 `json:"max_timestamp"`
	// State is "active" or "closed" for a local segment, and the KIP-405
	// state (COPY_SEGMENT_FINISHED, ...) for a remote one.
	State string `json:"state"`
	// Tiered: a local segment whose offsets are all in the bucket too.
	Tiered bool `json:"tiered,omitempty"`
	// LeaderEpoch is a remote segment's uploader's epoch.
	LeaderEpoch int32 `json:"leader_epoch,omitempty"`
}
