package adminapi

import (
	"errors"
	"time"
)

// The body of GET /v1/groups/lag: the last consumer-lag sample of the
// groups a node coordinates (package lag), with each group's recent totals.

// ConsumerLagPath is the admin HTTP path of a node's consumer-lag sample.
const ConsumerLagPath = "/v1/groups/lag"

// ConsumerLag is one sample of the lag of the groups a node coordinates.
// At is zero before the node's first sample.
type ConsumerLag struct {
	NodeID int32              `json:"node_id"`
	At     time.Time          `json:"at"`
	Groups []ConsumerGroupLag `json:"groups"`
}

// ConsumerGroupLag is one group's lag.
type ConsumerGroupLag struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	// Type is the group's protocol: "classic" (JoinGroup/SyncGroup) or
	// "consumer" (KIP-848's ConsumerGroupHeartbeat); "" when not known.
	Type       string                 `json:"type,omitempty"`
	Members    int                    `json:"members"`
	Partitions []ConsumerPartitionLag `json:"partitions"`
	// History is the group's total lag at the samples kept, oldest first
	// (only in the admin API's answer).
	History []LagPoint `json:"history,omitempty"`
}

// Total is the group's lag summed over its partitions.
func (g ConsumerGroupLag) Total() int64 {
	var n int64
	for _, p := range g.Partitions {
		n += max(p.Lag, 0)
	}
	return n
}

// ConsumerPartitionLag is one partition's lag for one group.
type ConsumerPartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset, -1 without a commit.
	Committed int64 `json:"committed_offset"`
	// End is the partition's high watermark.
	End int64 `json:"end_offset"`
	// Lag is End less Committed (less the log start without a commit).
	Lag int64 `json:"lag"`
	// TimeLagSeconds is the age of the oldest record not consumed (its
	// timestamp to the sample's time): 0 when Lag is 0, -1 when not known.
	TimeLagSeconds float64 `json:"time_lag_seconds"`
}

// LagPoint is a group's total lag at one sample.
type LagPoint struct {
	At  time.Time `json:"at"`
	Lag int64     `json:"lag"`
}

var errNoGroups = errors.New("no groups list")

func (l ConsumerLag) validate() error {
	if l.Groups == nil {
		return errNoGroups
	}
	for _, g := range l.Groups {
		if g.Partitions == nil {
			return errNoPartitions
		}
	}
	return nil
}
