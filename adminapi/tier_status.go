package adminapi

// The body of GET /v1/tier/status, behind `shale tier status` and
// sdk.Admin.TierStatus.

// TierStatusPath is the admin HTTP path of a node's tier status; ?topic=T
// restricts it to one topic.
const TierStatusPath = "/v1/tier/status"

// TierPartitionStatus is one local partition's line of a node's tier
// status. Offsets are -1 when unknown or absent.
type TierPartitionStatus struct {
	// Topic and Partition name the partition.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LogStartOffset is the first offset retained anywhere (remote or local).
	LogStartOffset int64 `json:"log_start_offset"`
	// LocalLogStartOffset is the first offset on the node's disk; offsets
	// from LogStartOffset below it are read from the bucket.
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	// HighWatermark is the partition's high watermark on this node.
	HighWatermark int64 `json:"high_watermark"`
	// LastTieredOffset is the last offset in readable remote segments; -1
	// when none is.
	LastTieredOffset int64 `json:"last_tiered_offset"`
	// RemoteSegments and RemoteBytes count the remote segments whose copy
	// has finished, and their bytes.
	RemoteSegments int   `json:"remote_segments"`
	RemoteBytes    int64 `json:"remote_bytes"`
	// UploadLagSegments and UploadLagBytes count the closed local segments
	// holding offsets above LastTieredOffset: what tiering has still to copy.
	UploadLagSegments int   `json:"upload_lag_segments"`
	UploadLagBytes    int64 `json:"upload_lag_bytes"`
	// UploadLagOffsets is HighWatermark - (LastTieredOffset + 1), at least
	// 0: the offsets not yet in the bucket, the active segment included.
	UploadLagOffsets int64 `json:"upload_lag_offsets"`
}

// TierStatus is the body of GET /v1/tier/status: one node's tier status.
type TierStatus struct {
	// NodeID is the answering node's id.
	NodeID int32 `json:"node_id"`
	// Partitions are the node's local partitions (of the requested topic
	// only, with ?topic=T), sorted by topic and partition; never null.
	Partitions []TierPartitionStatus `json:"partitions"`
}

// validate reports a body that decoded but is no tier status: one without
// a partitions list (the server always sends one).
func (s TierStatus) validate() error {
	if s.Partitions == nil {
		return errNoPartitions
	}
	return nil
}
