package coordinator

// Group configs (KIP-848, KIP-932): the settings one consumer or share
// group may have apart from the node-wide defaults, Kafka's GroupConfig.
// They are the GROUP config resource (type 32) of DescribeConfigs and
// (Incremental)AlterConfigs, stored in the control plane; the group and
// share coordinators resolve them (GroupConfigRules.Resolve) at each
// heartbeat, acquisition and share-partition initialization. This file is
// the rules only: names, types, the checks Kafka makes before storing a
// value, and the effective values; it does no I/O.

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Kafka's group config names (GroupConfig.java): the broker-wide
// defaults are named the same with a "group." prefix.
const (
	GroupConsumerSessionTimeoutMs    = "consumer.session.timeout.ms"
	GroupConsumerHeartbeatIntervalMs = "consumer.heartbeat.interval.ms"
	GroupShareSessionTimeoutMs       = "share.session.timeout.ms"
	GroupShareHeartbeatIntervalMs    = "share.heartbeat.interval.ms"
	GroupShareRecordLockDurationMs   = "share.record.lock.duration.ms"
	GroupShareDeliveryCountLimit     = "share.delivery.count.limit"
	GroupShareAutoOffsetReset        = "share.auto.offset.reset"
	GroupShareIsolationLevel         = "share.isolation.level"
)

// ErrInvalidGroupConfig is a group config Kafka would refuse: an unknown
// name, a value of the wrong type, out of its bounds, or not built
// (INVALID_CONFIG at the protocol edge).
var ErrInvalidGroupConfig = errors.New("invalid group config")

// GroupConfigKey describes one group config.
type GroupConfigKey struct {
	Name string
	// Int: an int32 value (Kafka's INT); otherwise a string.
	Int bool
	Doc string
}

// GroupConfigKeys are the group configs Shale builds, sorted by name.
// Kafka's other group configs (share.partition.max.record.locks,
// share.renew.acknowledge.enable, streams.*) are refused as unknown.
var GroupConfigKeys = []GroupConfigKey{
	{GroupConsumerHeartbeatIntervalMs, true, "The heartbeat interval given to the members of this consumer group."},
	{GroupConsumerSessionTimeoutMs, true, "The timeout to detect client failures when using the consumer group protocol."},
	{GroupShareAutoOffsetReset, false, "The strategy to initialize the share-partition start offset: latest or earliest."},
	{GroupShareDeliveryCountLimit, true, "The maximum number of delivery attempts for a record delivered to a share group."},
	{GroupShareHeartbeatIntervalMs, true, "The heartbeat interval given to the members of this share group."},
	{GroupShareIsolationLevel, false, "How the share group reads records written transactionally: read_uncommitted (every record below the high watermark) or read_committed (below the last stable offset, aborted transactions' records archived)."},
	{GroupShareRecordLockDurationMs, true, "The record acquisition lock duration in milliseconds for this share group."},
	{GroupShareSessionTimeoutMs, true, "The timeout to detect client failures when using the share group protocol."},
}

// LookupGroupConfigKey returns the key named name.
func LookupGroupConfigKey(name string) (GroupConfigKey, bool) {
	for _, k := range GroupConfigKeys {
		if k.Name == name {
			return k, true
		}
	}
	return GroupConfigKey{}, false
}

// GroupConfig is a group's effective settings.
type GroupConfig struct {
	ConsumerSessionTimeoutMs    int32
	ConsumerHeartbeatIntervalMs int32
	ShareSessionTimeoutMs       int32
	ShareHeartbeatIntervalMs    int32
	ShareRecordLockDurationMs   int32
	ShareDeliveryCountLimit     int32
	// ShareAutoOffsetReset is "latest" or "earliest".
	ShareAutoOffsetReset string
	// ShareIsolationLevel is "read_uncommitted" or "read_committed".
	ShareIsolationLevel string
}

// Value is the config named name as DescribeConfigs shows it.
func (c GroupConfig) Value(name string) string {
	switch name {
	case GroupConsumerSessionTimeoutMs:
		return strconv.Itoa(int(c.ConsumerSessionTimeoutMs))
	case GroupConsumerHeartbeatIntervalMs:
		return strconv.Itoa(int(c.ConsumerHeartbeatIntervalMs))
	case GroupShareSessionTimeoutMs:
		return strconv.Itoa(int(c.ShareSessionTimeoutMs))
	case GroupShareHeartbeatIntervalMs:
		return strconv.Itoa(int(c.ShareHeartbeatIntervalMs))
	case GroupShareRecordLockDurationMs:
		return strconv.Itoa(int(c.ShareRecordLockDurationMs))
	case GroupShareDeliveryCountLimit:
		return strconv.Itoa(int(c.ShareDeliveryCountLimit))
	case GroupShareAutoOffsetReset:
		return c.ShareAutoOffsetReset
	case GroupShareIsolationLevel:
		return c.ShareIsolationLevel
	}
	return ""
}

// Bounds are the broker-wide least and greatest value of one int group
// config (Kafka's group.consumer.min.session.timeout.ms and the like).
type Bounds struct{ Min, Max int32 }

// GroupConfigRules are the node's defaults for every group and the
// bounds a group's own value must keep to.
type GroupConfigRules struct {
	Defaults GroupConfig
	// Bounds by config name; a name without bounds has [1, MaxInt32].
	Bounds map[string]Bounds
}

// atLeast is each int config's own lower limit in Kafka's ConfigDef.
var atLeast = map[string]int32{
	GroupShareRecordLockDurationMs: 1000,
	GroupShareDeliveryCountLimit:   2,
}

// Validate checks a group's whole set of configs as it would be stored,
// as Kafka's GroupConfig.validate does: every name known, every value of
// its type and within the broker-wide bounds, and each session timeout
// above its heartbeat interval (the group's own, or the node's default
// for the one it does not set). Unlike Kafka, the node's defaults are not
// themselves checked against the bounds (Shale lets a node run shorter
// sessions than a group may ask for). Errors wrap ErrInvalidGroupConfig.
func (r GroupConfigRules) Validate(configs map[string]string) error {
	for name, v := range configs {
		key, ok := LookupGroupConfigKey(name)
		if !ok {
			return fmt.Errorf("%w: Unknown group config name: %s", ErrInvalidGroupConfig, name)
		}
		if !key.Int {
			if err := validateGroupString(name, v); err != nil {
				return err
			}
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type INT", ErrInvalidGroupConfig, v, name)
		}
		if least := max(atLeast[name], 1); int32(n) < least {
			return fmt.Errorf("%w: Invalid value %d for configuration %s: Value must be at least %d", ErrInvalidGroupConfig, n, name, least)
		}
		if b, ok := r.Bounds[name]; ok {
			if int32(n) < b.Min {
				return fmt.Errorf("%w: %s must be greater than or equal to group.%s (%d)", ErrInvalidGroupConfig, name, minName(name), b.Min)
			}
			if int32(n) > b.Max {
				return fmt.Errorf("%w: %s must be less than or equal to group.%s (%d)", ErrInvalidGroupConfig, name, maxName(name), b.Max)
			}
		}
	}
	c := r.apply(r.Defaults, configs)
	_, setCS := configs[GroupConsumerSessionTimeoutMs]
	_, setCH := configs[GroupConsumerHeartbeatIntervalMs]
	if (setCS || setCH) && c.ConsumerSessionTimeoutMs <= c.ConsumerHeartbeatIntervalMs {
		return fmt.Errorf("%w: %s must be greater than %s", ErrInvalidGroupConfig, GroupConsumerSessionTimeoutMs, GroupConsumerHeartbeatIntervalMs)
	}
	_, setSS := configs[GroupShareSessionTimeoutMs]
	_, setSH := configs[GroupShareHeartbeatIntervalMs]
	if (setSS || setSH) && c.ShareSessionTimeoutMs <= c.ShareHeartbeatIntervalMs {
		return fmt.Errorf("%w: %s must be greater than %s", ErrInvalidGroupConfig, GroupShareSessionTimeoutMs, GroupShareHeartbeatIntervalMs)
	}
	return nil
}

// minName and maxName are the broker-wide bound's name without "group.":
// consumer.min.session.timeout.ms for consumer.session.timeout.ms.
func minName(name string) string { return boundName(name, "min") }
func maxName(name string) string { return boundName(name, "max") }

func boundName(name, which string) string {
	kind, rest, _ := strings.Cut(name, ".")
	return kind + "." + which + "." + rest
}

func validateGroupString(name, v string) error {
	switch name {
	case GroupShareAutoOffsetReset:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "latest", "earliest":
			return nil
		}
		if strings.HasPrefix(strings.ToLower(v), "by_duration:") {
			return fmt.Errorf("%w: %s=%s: by_duration is not built in Shale (latest or earliest)", ErrInvalidGroupConfig, name, v)
		}
		return fmt.Errorf("%w: Invalid value %s for configuration %s: latest, earliest or by_duration:<duration>", ErrInvalidGroupConfig, v, name)
	case GroupShareIsolationLevel:
		switch strings.TrimSpace(v) {
		case "read_uncommitted", "read_committed":
			return nil
		}
		return fmt.Errorf("%w: Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", ErrInvalidGroupConfig, v, name)
	}
	return nil
}

// Resolve returns a group's effective settings: the node's defaults with
// the group's own values over them, each int clamped to the broker-wide
// bounds as Kafka's GroupConfig.evaluate does (bounds may have narrowed
// since the value was stored; a clamp is logged when log is not nil).
// Values that do not parse are ignored (Validate keeps them out). Pure.
func (r GroupConfigRules) Resolve(group string, configs map[string]string, log *slog.Logger) GroupConfig {
	if len(configs) == 0 {
		return r.Defaults
	}
	clamped := map[string]string{}
	for name, v := range configs {
		b, ok := r.Bounds[name]
		if !ok {
			clamped[name] = v
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			continue
		}
		c := min(max(int32(n), b.Min), b.Max)
		if c != int32(n) && log != nil {
			log.Warn("group config out of the broker's bounds: the effective value is capped", "group", group, "config", name, "value", n, "effective", c)
		}
		clamped[name] = strconv.Itoa(int(c))
	}
	return r.apply(r.Defaults, clamped)
}

// apply returns base with the parseable values of configs over it.
func (r GroupConfigRules) apply(base GroupConfig, configs map[string]string) GroupConfig {
	for name, v := range configs {
		key, ok := LookupGroupConfigKey(name)
		if !ok {
			continue
		}
		if !key.Int {
			switch name {
			case GroupShareAutoOffsetReset:
				if s := strings.ToLower(strings.TrimSpace(v)); s == "latest" || s == "earliest" {
					base.ShareAutoOffsetReset = s
				}
			case GroupShareIsolationLevel:
				if s := strings.TrimSpace(v); s == "read_uncommitted" || s == "read_committed" {
					base.ShareIsolationLevel = s
				}
			}
			continue
		}
		n64, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n64 < 1 {
			continue
		}
		n := int32(n64)
		switch name {
		case GroupConsumerSessionTimeoutMs:
			base.ConsumerSessionTimeoutMs = n
		case GroupConsumerHeartbeatIntervalMs:
			base.ConsumerHeartbeatIntervalMs = n
		case GroupShareSessionTimeoutMs:
			base.ShareSessionTimeoutMs = n
		case GroupShareHeartbeatIntervalMs:
			base.ShareHeartbeatIntervalMs = n
		case GroupShareRecordLockDurationMs:
			base.ShareRecordLockDurationMs = n
		case GroupShareDeliveryCountLimit:
			base.ShareDeliveryCountLimit = n
		}
	}
	return base
}
