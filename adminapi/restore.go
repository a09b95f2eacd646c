package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// The body of POST /v1/restore, behind `shale topic restore` and `shale
// cluster restore` (package restore; docs/bucket-format.md).

// RestorePath is the admin HTTP path of a restore from the bucket.
const RestorePath = "/v1/restore"

// RestoreRequest asks a node to restore topics from its bucket: those
// named in Topics, or with All every topic the bucket holds (internal
// topics aside). DryRun reports what a restore would do and writes
// nothing.
type RestoreRequest struct {
	Topics []string `json:"topics,omitempty"`
	All    bool     `json:"all,omitempty"`
	DryRun bool     `json:"dry_run,omitempty"`
}

// RestoreReport is the answer: per topic what was restored and what the
// bucket did not hold.
type RestoreReport struct {
	// FormatVersion is the bucket's format version (0: no marker).
	FormatVersion int  `json:"format_version"`
	DryRun        bool `json:"dry_run"`
	// Topics are the topics asked for (or found, with All), by name;
	// never null.
	Topics []RestoredTopic `json:"topics"`
	// GroupOffsets says where the groups' committed offsets came from:
	// the uploaded segments of __consumer_offsets up to a time, or why
	// there are none.
	GroupOffsets string `json:"group_offsets"`
	// Problems are the bucket's objects the restore could not use.
	Problems []string `json:"problems"`
}

// RestoredTopic is one topic's line of a RestoreReport.
type RestoredTopic struct {
	Topic   string `json:"topic"`
	TopicID string `json:"topic_id,omitempty"`
	// Status is "restored", "planned" (a dry run), "exists" (the topic is
	// live with this id already), "refused" or "not found".
	Status            string            `json:"status"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	// Descriptor says whether the bucket held the topic's descriptor
	// (partitions, replication factor, configs); without it they are
	// inferred, and Missing says so.
	Descriptor bool                `json:"descriptor"`
	Partition  []RestoredPartition `json:"partition_details"`
	// GroupOffsets are the committed offsets of the topic's groups to
	// commit in the restored cluster (the CLI commits them).
	GroupOffsets []RestoredGroupOffset `json:"group_offsets"`
	// Missing is what the restore needed and the bucket did not hold.
	Missing []string `json:"missing"`
	Error   string   `json:"error,omitempty"`
}

// RestoredPartition is one partition of a restored topic.
type RestoredPartition struct {
	Partition int32 `json:"partition"`
	Segments  int   `json:"segments"`
	// LogStartOffset and NextOffset bound the restored offsets
	// [LogStartOffset, NextOffset); both 0 when nothing was uploaded.
	LogStartOffset int64 `json:"log_start_offset"`
	NextOffset     int64 `json:"next_offset"`
	// LeaderEpoch is the restored partition's first leader epoch.
	LeaderEpoch int32 `json:"leader_epoch"`
	// Gaps are offset ranges inside the restored ones that no uploaded
	// segment holds: lost.
	Gaps []OffsetRange `json:"gaps,omitempty"`
	// Skipped counts the uploaded segments left out (outside the lineage
	// or covered by others).
	Skipped int `json:"skipped"`
	// LastUpload is when the last restored segment was uploaded, and
	// HighWatermarkAtLastUpload the partition's high watermark then (0:
	// not recorded). NotUploaded is the difference with NextOffset: the
	// offsets, at least, that were never uploaded and are lost (-1:
	// unknown); what was produced after the last upload comes on top.
	LastUpload                time.Time `json:"last_upload"`
	HighWatermarkAtLastUpload int64     `json:"high_watermark_at_last_upload"`
	NotUploaded               int64     `json:"not_uploaded"`
}

// OffsetRange is [First, Last], inclusive.
type OffsetRange struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// RestoredGroupOffset is a group's committed offset of one partition: as
// the bucket last recorded it (Committed) and as restored (Offset, no
// further than the partition's restored end).
type RestoredGroupOffset struct {
	Group       string `json:"group"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Committed   int64  `json:"committed"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

var errNoTopics = errors.New("no topics list")

func (r RestoreReport) validate() error {
	if r.Topics == nil {
		return errNoTopics
	}
	return nil
}

// Restore POSTs req to RestorePath on node (see URL). Errors are as
// TierStatus's.
func (c Client) Restore(ctx context.Context, node string, req RestoreRequest) (RestoreReport, error) {
	return send[RestoreReport](ctx, c, http.MethodPost, URL(node, RestorePath, ""), req)
}
