package adminapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// The quarantine of remote deletes (docs/tiering.md, "Quarantine"), behind
// `shale tier quarantine list|restore|purge`. GET QuarantinePath lists the
// entries (?topic=T for one topic); POST QuarantineRestorePath and
// QuarantinePurgePath with a QuarantineRequest restore or purge the entries
// it selects and answer a Quarantine: for a restore, the entries as they
// stand once the partition leaders are done (restored ones gone, refused
// ones Quarantined again with a note) or the wait ran out (still
// restoring); for a purge, the entries purged. Any node answers; a
// request that selects nothing, or an entry that cannot be restored (an
// orphan object, a deleted topic's segment), is refused with 400.

// Admin HTTP paths of the quarantine.
const (
	QuarantinePath        = "/v1/tier/quarantine"
	QuarantineRestorePath = "/v1/tier/quarantine/restore"
	QuarantinePurgePath   = "/v1/tier/quarantine/purge"
)

// QuarantineRequest selects entries: those of Topic (required), of
// Partition unless it is nil, with one of IDs unless IDs is empty.
type QuarantineRequest struct {
	Topic     string   `json:"topic"`
	Partition *int32   `json:"partition,omitempty"`
	IDs       []string `json:"ids,omitempty"`
	// WaitMs bounds how long a restore waits for the leaders (default
	// 30000).
	WaitMs int64 `json:"wait_ms,omitempty"`
}

// QuarantineEntry is one quarantined remote delete.
type QuarantineEntry struct {
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int32  `json:"partition"`
	// ID is the segment id, or "o..." for an object no record referenced.
	ID string `json:"id"`
	// Reason: retention, delete_records, topic_deleted, orphan_copy,
	// orphan_object.
	Reason string `json:"reason"`
	// State: quarantined, restoring, purging; Result, in a restore's or
	// purge's answer: restored, refused, restoring, purged.
	State  string `json:"state"`
	Result string `json:"result,omitempty"`
	// BaseOffset and EndOffset are the segment's offsets (-1 for an orphan
	// object); Bytes is the size of its .log object.
	BaseOffset    int64     `json:"base_offset"`
	EndOffset     int64     `json:"end_offset"`
	Bytes         int64     `json:"bytes"`
	Objects       int       `json:"objects"`
	QuarantinedAt time.Time `json:"quarantined_at"`
	PurgeAfter    time.Time `json:"purge_after"`
	// Note says why the last restore was refused.
	Note string `json:"note,omitempty"`
}

// Quarantine is the body of the quarantine endpoints.
type Quarantine struct {
	Entries []QuarantineEntry `json:"entries"`
}

func (q Quarantine) validate() error {
	if q.Entries == nil {
		return errors.New("no entries list")
	}
	return nil
}

// QuarantineList GETs QuarantinePath on node (one topic unless topic is "").
func (c Client) QuarantineList(ctx context.Context, node, topic string) (Quarantine, error) {
	return get[Quarantine](ctx, c, URL(node, QuarantinePath, topic))
}

// QuarantineRestore POSTs req to QuarantineRestorePath on node.
func (c Client) QuarantineRestore(ctx context.Context, node string, req QuarantineRequest) (Quarantine, error) {
	return send[Quarantine](ctx, c, http.MethodPost, URL(node, QuarantineRestorePath, ""), req)
}

// QuarantinePurge POSTs req to QuarantinePurgePath on node.
func (c Client) QuarantinePurge(ctx context.Context, node string, req QuarantineRequest) (Quarantine, error) {
	return send[Quarantine](ctx, c, http.MethodPost, URL(node, QuarantinePurgePath, ""), req)
}

// DecodeQuarantine reads a quarantine endpoint's body; ErrBadBody when it
// is not one.
func DecodeQuarantine(r io.Reader) (Quarantine, error) { return decode[Quarantine](r) }
