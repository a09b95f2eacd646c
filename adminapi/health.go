package adminapi

import (
	"errors"
	"time"
)

// The body of GET /v1/health/checks: what one node can see of its own
// health and of the parts it depends on, for `shale doctor`, which adds
// the cluster-wide view (partitions, skew, clocks) from several nodes.

// HealthPath is the admin HTTP path of a node's health checks.
const HealthPath = "/v1/health/checks"

// NodeHealth is one node's health as it sees it.
type NodeHealth struct {
	NodeID int32 `json:"node_id"`
	// Time is the node's clock when it answered; the caller compares it
	// with its own to estimate the node's clock skew.
	Time time.Time `json:"time"`
	// TookSeconds is how long the node took to answer (its checks wait on
	// NATS and the bucket), so that the caller can tell the network's
	// delay from the node's.
	TookSeconds float64 `json:"took_seconds"`
	// KafkaAddress is the address the node advertises to clients (for a
	// caller that has only the admin addresses).
	KafkaAddress string `json:"kafka_address"`
	Version      string `json:"version"`
	// Controller is true on the node holding the controller lease.
	Controller bool       `json:"controller"`
	NATS       NATSHealth `json:"nats"`
	// Bucket is nil on a node without a cold tier.
	Bucket *BucketHealth `json:"bucket,omitempty"`
	Disk   DiskHealth    `json:"disk"`
	// Certificates are the node's own certificates (listeners, admin
	// listener, NATS client), read from their files.
	Certificates []CertificateHealth `json:"certificates"`
	// UnderReplicated counts the partitions this node leads whose ISR is
	// smaller than their replica set; Offline, on the controller only,
	// the partitions without a leader.
	UnderReplicated int `json:"under_replicated_partitions"`
	Offline         int `json:"offline_partitions"`
}

// NATSHealth is the node's control-plane connection and the JetStream
// streams that hold the control plane's buckets.
type NATSHealth struct {
	Connected bool           `json:"connected"`
	Server    string         `json:"server,omitempty"` // the server it is connected to
	Error     string         `json:"error,omitempty"`  // why the streams could not be read
	Streams   []StreamHealth `json:"streams"`
}

// StreamHealth is one JetStream stream's replication.
type StreamHealth struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"` // configured
	Leader   string `json:"leader"`   // "" without one: the stream has no quorum
	// Peers are the replicas other than the leader; a peer that is
	// offline or not current leaves the stream with less redundancy.
	Peers []StreamPeer `json:"peers"`
}

// StreamPeer is one follower replica of a stream.
type StreamPeer struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline"`
	Lag     uint64 `json:"lag"`
}

// BucketHealth is the cold tier as the node sees it.
type BucketHealth struct {
	Location string `json:"location"`
	// Reachable is the result of a write, read and delete of a probe
	// object made for this check; Error says why it failed.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// UploadLagBytes and UploadLagSegments count the closed local segments
	// of the partitions this node leads that are not in the bucket yet.
	UploadLagBytes    int64  `json:"upload_lag_bytes"`
	UploadLagSegments int64  `json:"upload_lag_segments"`
	OrphansDeleted    uint64 `json:"orphans_deleted"` // since the node started
	// QuarantinedEntries and QuarantinedBytes count the remote deletes in
	// quarantine, cluster-wide, and the bytes of their segments' .log
	// objects (docs/tiering.md, "Quarantine").
	QuarantinedEntries int   `json:"quarantined_entries"`
	QuarantinedBytes   int64 `json:"quarantined_bytes"`
}

// DiskHealth is the filesystem of the node's data directory.
type DiskHealth struct {
	Path       string `json:"path"`
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"` // available to the node's user
	// Full is the tiering loop's disk-full state (local retention cannot
	// free space because uploads are behind).
	Full bool `json:"full"`
}

// CertificateHealth is one certificate file of the node.
type CertificateHealth struct {
	Use      string    `json:"use"` // "listeners", "admin", "nats"
	Path     string    `json:"path"`
	Subject  string    `json:"subject,omitempty"`
	NotAfter time.Time `json:"not_after"`
	Error    string    `json:"error,omitempty"` // the file could not be read or parsed
}

var errNoStreams = errors.New("no streams list")

func (h NodeHealth) validate() error {
	if h.NATS.Streams == nil || h.Certificates == nil {
		return errNoStreams
	}
	return nil
}
