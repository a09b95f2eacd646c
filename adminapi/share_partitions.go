package adminapi

// The body of GET /v1/groups/share-partitions?group=G: the KIP-932
// share-partitions of one share group that a node leads, with what no
// Kafka API reports: the records each holds in flight (Kafka 4.1's
// SharePartition InFlightMessageCount metric, KIP-1103). A share group's
// partitions are spread over their leaders; ask every node.

import (
	"context"
	"io"
	"net/url"
)

// SharePartitionsPath is the admin HTTP path of a node's share-partitions.
const SharePartitionsPath = "/v1/groups/share-partitions"

// SharePartitions is the share-partitions of one group that a node leads.
type SharePartitions struct {
	NodeID     int32            `json:"node_id"`
	Group      string           `json:"group"`
	Partitions []SharePartition `json:"partitions"`
}

// SharePartition is one share-partition's position on its leader.
type SharePartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// StartOffset is the share-partition start offset: every record below
	// it is acknowledged or archived.
	StartOffset int64 `json:"start_offset"`
	// InFlight counts the records tracked from StartOffset on: Acquired
	// (held by a member now), Available (released, or their lock expired,
	// to be delivered again) and the acknowledged or archived ones the
	// start offset has not passed yet.
	InFlight  int `json:"in_flight"`
	Acquired  int `json:"acquired"`
	Available int `json:"available"`
	// Lag counts the records at or above StartOffset, below the high
	// watermark, neither acknowledged nor archived (DescribeShareGroupOffsets'
	// lag).
	Lag int64 `json:"lag"`
}

func (s SharePartitions) validate() error {
	if s.Partitions == nil {
		return errNoPartitions
	}
	return nil
}

// SharePartitions GETs SharePartitionsPath for group from node (see URL).
// Errors are as TierStatus's.
func (c Client) SharePartitions(ctx context.Context, node, group string) (SharePartitions, error) {
	u, err := url.Parse(URL(node, SharePartitionsPath, ""))
	if err != nil {
		return SharePartitions{}, err
	}
	u.RawQuery = url.Values{"group": {group}}.Encode()
	return get[SharePartitions](ctx, c, u.String())
}

// DecodeSharePartitions reads one node's share-partitions from r (at most
// MaxBodyBytes); anything else is an error wrapping ErrBadBody.
func DecodeSharePartitions(r io.Reader) (SharePartitions, error) { return decode[SharePartitions](r) }
