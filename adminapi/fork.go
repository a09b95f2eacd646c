package adminapi

import (
	"context"
	"net/http"
)

// The body of POST /v1/fork, behind `shale topic fork` (package restore,
// docs/bucket-format.md "Forks").

// ForkPath is the admin HTTP path of a point-in-time fork of a topic.
const ForkPath = "/v1/fork"

// ForkRequest asks for a new topic Name whose history is Source's up to a
// cut: AtOffset (every partition's records below it), or with
// AtTimestamp set the first offset whose record timestamp (ms) is >= it,
// per partition. A cut inside a record batch moves down to the batch's
// first offset.
type ForkRequest struct {
	Source      string `json:"source"`
	Name        string `json:"name"`
	AtOffset    int64  `json:"at_offset"`
	AtTimestamp *int64 `json:"at_timestamp,omitempty"`
}

// ForkReport is the answer: the new topic and each partition's cut.
type ForkReport struct {
	Topic    string `json:"topic"`
	TopicID  string `json:"topic_id"`
	Source   string `json:"source"`
	SourceID string `json:"source_id"`
	// Partitions are the fork's partitions, never null.
	Partitions []ForkedPartition `json:"partitions"`
}

// ForkedPartition is one partition of a fork: its history is the
// source's offsets [LogStartOffset, Cut), read from Segments of the
// source's objects, and it is written from Cut on.
type ForkedPartition struct {
	Partition      int32 `json:"partition"`
	Cut            int64 `json:"cut"`
	LogStartOffset int64 `json:"log_start_offset"`
	Segments       int   `json:"segments"`
	// Straddled says that the last referenced segment holds offsets past
	// the cut (the fork's record of it ends at Cut-1).
	Straddled bool `json:"straddled"`
}

func (r ForkReport) validate() error {
	if r.Partitions == nil {
		return errNoPartitions
	}
	return nil
}

// Fork POSTs req to ForkPath on node (see URL). Errors are as
// TierStatus's; a refused fork is an HTTP 409 whose message says why.
func (c Client) Fork(ctx context.Context, node string, req ForkRequest) (ForkReport, error) {
	return send[ForkReport](ctx, c, http.MethodPost, URL(node, ForkPath, ""), req)
}
