package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// TierStatusPath is the admin HTTP path of a node's tier status.
const TierStatusPath = "/v1/tier/status"

// TierPartitionStatus is one partition's tier status on a node (the JSON of
// the node's /v1/tier/status). Offsets are -1 when unknown or absent.
type TierPartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LogStartOffset is the first offset retained anywhere (remote or local).
	LogStartOffset int64 `json:"log_start_offset"`
	// LocalLogStartOffset is the first offset on the node's disk; offsets
	// from LogStartOffset below it are read from the bucket.
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	HighWatermark       int64 `json:"high_watermark"`
	// LastTieredOffset is the last offset in readable remote segments.
	LastTieredOffset int64 `json:"last_tiered_offset"`
	RemoteSegments   int   `json:"remote_segments"`
	RemoteBytes      int64 `json:"remote_bytes"`
	// UploadLagSegments and UploadLagBytes count the closed local segments
	// still to copy; UploadLagOffsets is the offsets not yet in the bucket,
	// the active segment included.
	UploadLagSegments int   `json:"upload_lag_segments"`
	UploadLagBytes    int64 `json:"upload_lag_bytes"`
	UploadLagOffsets  int64 `json:"upload_lag_offsets"`
}

// TierStatus is one node's tier status: its local partitions, sorted by
// topic and partition.
type TierStatus struct {
	NodeID     int32                 `json:"node_id"`
	Partitions []TierPartitionStatus `json:"partitions"`
}

// TierStatus reads the tier status of the node at WithAdminURL, restricted
// to topic unless topic is "". A node reports only the partitions it holds.
func (a *Admin) TierStatus(ctx context.Context, topic string) (TierStatus, error) {
	if a.closed.Load() {
		return TierStatus{}, ErrClosed
	}
	if a.adminURL == "" {
		return TierStatus{}, ErrNoAdminURL
	}
	u := strings.TrimSuffix(a.adminURL, "/") + TierStatusPath
	if topic != "" {
		u += "?topic=" + url.QueryEscape(topic)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return TierStatus{}, fmt.Errorf("sdk: tier status: %w", err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return TierStatus{}, fmt.Errorf("sdk: tier status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return TierStatus{}, fmt.Errorf("%w: GET %s: %s: %s", ErrAdminHTTP, u, resp.Status, strings.TrimSpace(string(body)))
	}
	var st TierStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return TierStatus{}, fmt.Errorf("sdk: tier status: decode: %w", err)
	}
	return st, nil
}
