package share

import (
	"log/slog"

	"github.com/shale-io/shale/authz"
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
	// AutoOffsetReset is share.auto.offset.reset, where a share-partition
	// without state starts: "latest" (Kafka's default: the high
	// watermark) or "earliest" (the log start, remote included).
	AutoOffsetReset string
	Authorizer      *authz.Authorizer // nil allows everything
	Logger          *slog.Logger
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
	if c.AutoOffsetReset != "earliest" {
		c.AutoOffsetReset = "latest"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
