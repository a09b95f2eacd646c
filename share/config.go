package share

import (
	"context"
	"log/slog"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/coordinator"
)

// Config configures the share group coordinator and the share-partition
// manager of a node. Zero fields take Kafka 4's defaults.
type Config struct {
	// Limits are group.share.record.lock.duration.ms,
	// group.share.delivery.count.limit and
	// group.share.partition.max.record.locks.
	Limits Limits
	// SessionTimeoutMs is group.share.session.timeout.ms (45000).
	SessionTimeoutMs int32
	// HeartbeatIntervalMs is group.share.heartbeat.interval.ms (5000).
	HeartbeatIntervalMs int32
	// MaxSize is group.share.max.size: members of one share group at most
	// (Kafka's default 200); a member that would join past it gets
	// GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// AutoOffsetReset is share.auto.offset.reset, where a share-partition
	// without state starts: "latest" (Kafka's default: the high
	// watermark) or "earliest" (the log start, remote included).
	AutoOffsetReset string
	// GroupConfig returns a share group's effective settings: its group
	// configs (KIP-932) over the node's defaults, resolved by the caller
	// (coordinator.GroupConfigRules.Resolve). It is called at each
	// heartbeat, expiry check, ShareFetch and ShareAcknowledge, so it
	// must not do I/O. Nil gives every group the fields above.
	GroupConfig func(group string) coordinator.GroupConfig
	Authorizer  *authz.Authorizer // nil allows everything
	Logger      *slog.Logger
	// EndOffsets returns the ends of topic's partitions that their leaders
	// report (ListOffsets latest: the high watermark, or with
	// readCommitted the last stable offset), for DescribeShareGroupOffsets'
	// lag of partitions this node does not lead; a partition left out is
	// unknown. Nil: their lag is unknown (-1).
	EndOffsets func(ctx context.Context, topic string, partitions []int32, readCommitted bool) (map[int32]int64, error)
}

func (c *Config) setDefaults() {
	d := DefaultLimits()
	if c.Limits.LockDurationMs <= 0 {
		c.Limits.LockDurationMs = d.LockDurationMs
	}
	if c.Limits.DeliveryLimit <= 0 {
		c.Limits.DeliveryLimit = d.DeliveryLimit
	}
	if c.Limits.MaxInFlight <= 0 {
		c.Limits.MaxInFlight = d.MaxInFlight
	}
	if c.SessionTimeoutMs <= 0 {
		c.SessionTimeoutMs = 45000
	}
	if c.HeartbeatIntervalMs <= 0 {
		c.HeartbeatIntervalMs = 5000
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 200
	}
	if c.AutoOffsetReset != "earliest" {
		c.AutoOffsetReset = "latest"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// groupSettings are one share group's settings: the node's, with the
// group's configs over them (Config.GroupConfig).
type groupSettings struct {
	sessionTimeoutMs, heartbeatIntervalMs int32
	limits                                Limits
	autoOffsetReset                       string
	// readCommitted is share.isolation.level=read_committed: fetches
	// stop at the last stable offset and the records of aborted
	// transactions are archived, never delivered.
	readCommitted bool
}

// group returns group's settings. A group config applies to the next
// heartbeat (interval), expiry check (session), acquisition and renewal
// (lock duration, delivery limit) and share-partition initialization
// (auto offset reset) and fetch (isolation level); records already
// acquired keep their deadlines.
func (c *Config) group(group string) groupSettings {
	s := groupSettings{sessionTimeoutMs: c.SessionTimeoutMs, heartbeatIntervalMs: c.HeartbeatIntervalMs,
		limits: c.Limits, autoOffsetReset: c.AutoOffsetReset}
	if c.GroupConfig == nil {
		return s
	}
	gc := c.GroupConfig(group)
	if gc.ShareSessionTimeoutMs > 0 {
		s.sessionTimeoutMs = gc.ShareSessionTimeoutMs
	}
	if gc.ShareHeartbeatIntervalMs > 0 {
		s.heartbeatIntervalMs = gc.ShareHeartbeatIntervalMs
	}
	if gc.ShareRecordLockDurationMs > 0 {
		s.limits.LockDurationMs = int64(gc.ShareRecordLockDurationMs)
	}
	if gc.ShareDeliveryCountLimit > 0 && gc.ShareDeliveryCountLimit <= 1<<15-1 {
		s.limits.DeliveryLimit = int16(gc.ShareDeliveryCountLimit)
	}
	if gc.ShareAutoOffsetReset == "earliest" || gc.ShareAutoOffsetReset == "latest" {
		s.autoOffsetReset = gc.ShareAutoOffsetReset
	}
	s.readCommitted = gc.ShareIsolationLevel == "read_committed"
	return s
}
