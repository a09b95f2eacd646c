package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidConfig marks a topic or broker configuration value that cannot be
// used; the protocol edge answers it with INVALID_CONFIG.
var ErrInvalidConfig = errors.New("config: invalid value")

// ErrUnknownConfig marks a topic configuration name Shale does not know.
var ErrUnknownConfig = errors.New("config: unknown topic config")

// Type is the type of a topic configuration value, as DescribeConfigs reports it.
type Type int8

// Kafka's config types (DescribeConfigs v3+ ConfigType).
const (
	TypeBoolean Type = 1
	TypeString  Type = 2
	TypeInt     Type = 3
	TypeShort   Type = 4
	TypeLong    Type = 5
	TypeDouble  Type = 6
	TypeList    Type = 7
)

// TopicKey describes one topic-level configuration, with Kafka's name.
type TopicKey struct {
	Name    string
	Type    Type
	Default string
	Doc     string
	// Check validates a value that already parsed as Type; nil accepts all.
	Check func(v string) error
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, ok := range vals {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("%w: %q is not one of %s", ErrInvalidConfig, v, strings.Join(vals, ", "))
	}
}

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min {
			return fmt.Errorf("%w: %d is below the minimum %d", ErrInvalidConfig, n, min)
		}
		return nil
	}
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// Topic configuration names.
const (
	RetentionMs                = "retention.ms"
	RetentionBytes             = "retention.bytes"
	LocalRetentionMs           = "local.retention.ms"
	LocalRetentionBytes        = "local.retention.bytes"
	RemoteStorageEnable        = "remote.storage.enable"
	RemoteDeleteGraceMs        = "remote.delete.grace.ms"
	SegmentBytes               = "segment.bytes"
	SegmentMs                  = "segment.ms"
	SegmentIndexBytes          = "segment.index.bytes"
	IndexIntervalBytes         = "index.interval.bytes"
	CompressionType            = "compression.type"
	CleanupPolicy              = "cleanup.policy"
	MaxMessageBytes            = "max.message.bytes"
	MessageTimestampType       = "message.timestamp.type"
	MessageTimestampBeforeMax  = "message.timestamp.before.max.ms"
	MessageTimestampAfterMax   = "message.timestamp.after.max.ms"
	MinInsyncReplicas          = "min.insync.replicas"
	FlushMessages              = "flush.messages"
	FlushMs                    = "flush.ms"
	FileDeleteDelayMs          = "file.delete.delay.ms"
	DeleteRetentionMs          = "delete.retention.ms"
	UncleanLeaderElection      = "unclean.leader.election.enable"
	MinCompactionLagMs         = "min.compaction.lag.ms"
	MaxCompactionLagMs         = "max.compaction.lag.ms"
	MinCleanableDirtyRatio     = "min.cleanable.dirty.ratio"
	MessageDownconversionEnabl = "message.downconversion.enable"
)

// TopicKeys lists every topic configuration Shale understands, with Kafka's
// defaults. Broker-wide defaults (Broker.TopicDefaults) override Default.
var TopicKeys = []TopicKey{
	{RetentionMs, TypeLong, "604800000", "How long a record is kept at all (local and remote); -1 keeps forever.", atLeast(-1)},
	{RetentionBytes, TypeLong, "-1", "Bytes kept per partition at all (local and remote); -1 has no limit.", atLeast(-1)},
	{LocalRetentionMs, TypeLong, "-2", "How long a record stays on local disk when remote storage is on; -2 means retention.ms.", atLeast(-2)},
	{LocalRetentionBytes, TypeLong, "-2", "Bytes kept on local disk per partition when remote storage is on; -2 means retention.bytes.", atLeast(-2)},
	{RemoteStorageEnable, TypeBoolean, "false", "Copy closed segments to the object store (tiered storage).", nil},
	{RemoteDeleteGraceMs, TypeLong, "86400000", "How long a remote segment that retention, DeleteRecords, topic deletion or orphan cleanup removed stays in quarantine (listed, restorable with shale tier quarantine restore) before its objects are deleted; 0 deletes at once.", atLeast(0)},
	{SegmentBytes, TypeInt, "1073741824", "Size at which the active segment rolls. A record batch must fit in one segment: a larger one is refused with RECORD_LIST_TOO_LARGE (Kafka's RecordBatchTooLargeException), so keep it above max.message.bytes and the producers' batch size.", atLeast(14)},
	{SegmentMs, TypeLong, "604800000", "Age at which the active segment rolls.", atLeast(1)},
	{SegmentIndexBytes, TypeInt, "10485760", "Size each offset and time index is preallocated to.", atLeast(8)},
	{IndexIntervalBytes, TypeInt, "4096", "Bytes of log between two index entries.", atLeast(0)},
	{CompressionType, TypeString, "producer", "Codec the broker stores batches with; producer keeps the producer's.", oneOf("producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd")},
	{CleanupPolicy, TypeList, "delete", "delete removes old segments; compact keeps the latest record per key.", oneOf("delete", "compact", "compact,delete", "delete,compact")},
	{MaxMessageBytes, TypeInt, "1048588", "Largest record batch the broker accepts; a larger one is refused with MESSAGE_TOO_LARGE.", atLeast(0)},
	{MessageTimestampType, TypeString, "CreateTime", "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's clock.", oneOf("CreateTime", "LogAppendTime")},
	{MessageTimestampBeforeMax, TypeLong, maxLong, "How far in the past a CreateTime timestamp may be.", atLeast(0)},
	{MessageTimestampAfterMax, TypeLong, maxLong, "How far in the future a CreateTime timestamp may be.", atLeast(0)},
	{MinInsyncReplicas, TypeInt, "1", "Replicas that must be in sync for acks=all.", atLeast(1)},
	{FlushMessages, TypeLong, maxLong, "Messages appended between two fsyncs.", atLeast(1)},
	{FlushMs, TypeLong, maxLong, "Milliseconds between two fsyncs.", atLeast(0)},
	{FileDeleteDelayMs, TypeLong, "60000", "Delay before a deleted segment's files are removed.", atLeast(0)},
	{DeleteRetentionMs, TypeLong, "86400000", "How long tombstones are kept on compacted topics.", atLeast(0)},
	{UncleanLeaderElection, TypeBoolean, "false", "Allow an out-of-sync replica to become leader.", nil},
	{MinCompactionLagMs, TypeLong, "0", "Minimum age of a record before it may be compacted.", atLeast(0)},
	{MaxCompactionLagMs, TypeLong, maxLong, "Maximum age of a record before it must be compacted.", atLeast(1)},
	{MinCleanableDirtyRatio, TypeDouble, "0.5", "Dirty ratio above which the cleaner compacts a log.", nil},
}

var topicKeyIndex = func() map[string]*TopicKey {
	m := make(map[string]*TopicKey, len(TopicKeys))
	for i := range TopicKeys {
		m[TopicKeys[i].Name] = &TopicKeys[i]
	}
	return m
}()

// LookupTopicKey returns the description of a topic config name.
func LookupTopicKey(name string) (*TopicKey, bool) {
	k, ok := topicKeyIndex[name]
	return k, ok
}

// ValidateTopicValue checks one topic config name and value.
func ValidateTopicValue(name, value string) error {
	k, ok := topicKeyIndex[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownConfig, name)
	}
	switch k.Type {
	case TypeBoolean:
		if value != "true" && value != "false" {
			return fmt.Errorf("%w: %s=%q is not a boolean", ErrInvalidConfig, name, value)
		}
	case TypeInt:
		if _, err := strconv.ParseInt(value, 10, 32); err != nil {
			return fmt.Errorf("%w: %s=%q is not an int", ErrInvalidConfig, name, value)
		}
	case TypeLong:
		if _, err := strconv.ParseInt(value, 10, 64); err != nil {
			return fmt.Errorf("%w: %s=%q is not a long", ErrInvalidConfig, name, value)
		}
	case TypeDouble:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("%w: %s=%q is not a double", ErrInvalidConfig, name, value)
		}
	}
	if k.Check != nil {
		if err := k.Check(value); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// Source says where an effective topic config value came from, with Kafka's
// DescribeConfigs ConfigSource numbers.
type Source int8

// Config sources.
const (
	SourceTopic   Source = 1 // DYNAMIC_TOPIC_CONFIG
	SourceBroker  Source = 4 // STATIC_BROKER_CONFIG
	SourceDefault Source = 5 // DEFAULT_CONFIG
)

// TopicConfig is the effective configuration of one topic: the topic's own
// values over the broker's defaults over Kafka's defaults. It is immutable
// once built; build a new one when configs change.
type TopicConfig struct {
	values map[string]string
	source map[string]Source
}

// ResolveTopic builds the effective config from explicit topic values and
// broker defaults. Unknown names in either map are ignored here (they were
// rejected when set).
func ResolveTopic(topic, brokerDefaults map[string]string) *TopicConfig {
	tc := &TopicConfig{values: make(map[string]string, len(TopicKeys)), source: make(map[string]Source, len(TopicKeys))}
	for _, k := range TopicKeys {
		tc.values[k.Name], tc.source[k.Name] = k.Default, SourceDefault
		if v, ok := brokerDefaults[k.Name]; ok {
			tc.values[k.Name], tc.source[k.Name] = v, SourceBroker
		}
		if v, ok := topic[k.Name]; ok {
			tc.values[k.Name], tc.source[k.Name] = v, SourceTopic
		}
	}
	return tc
}

// Get returns a value and its source.
func (tc *TopicConfig) Get(name string) (string, Source, bool) {
	v, ok := tc.values[name]
	return v, tc.source[name], ok
}

// Names returns the config names in sorted order.
func (tc *TopicConfig) Names() []string {
	out := make([]string, 0, len(tc.values))
	for n := range tc.values {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Int64 returns a numeric config value (0 when unparsable, which validation prevents).
func (tc *TopicConfig) Int64(name string) int64 {
	n, _ := strconv.ParseInt(tc.values[name], 10, 64)
	return n
}

// Bool returns a boolean config value.
func (tc *TopicConfig) Bool(name string) bool { return tc.values[name] == "true" }

// String returns a config value as text.
func (tc *TopicConfig) String(name string) string { return tc.values[name] }

// Millis returns a millisecond config as a duration, saturating at the max.
func (tc *TopicConfig) Millis(name string) time.Duration {
	ms := tc.Int64(name)
	if ms < 0 {
		return time.Duration(ms)
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// LocalRetentionMs is the effective local.retention.ms: -2 means retention.ms.
func (tc *TopicConfig) LocalRetentionMs() int64 {
	if v := tc.Int64(LocalRetentionMs); v != -2 {
		return v
	}
	return tc.Int64(RetentionMs)
}

// LocalRetentionBytes is the effective local.retention.bytes: -2 means retention.bytes.
func (tc *TopicConfig) LocalRetentionBytes() int64 {
	if v := tc.Int64(LocalRetentionBytes); v != -2 {
		return v
	}
	return tc.Int64(RetentionBytes)
}
