package restore

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/shale-io/shale/controlplane"
)

// FormatVersion is the version of the bucket layout this code writes and
// reads (docs/bucket-format.md). A bucket without a marker was written
// before markers existed; its layout is version 1's.
const FormatVersion = 1

// metaDir is the folder, under the bucket prefix, of the objects that are
// not a segment's: the format markers and the topic descriptors. The
// first folder of a segment key is 8 hex digits, never this.
const metaDir = "_shale"

// ErrBadFormat: a format marker or a topic descriptor read from the bucket
// failed its checks.
var ErrBadFormat = errors.New("restore: bad bucket metadata object")

// joinPrefix puts the bucket prefix (slashes trimmed; "" for none) before rest.
func joinPrefix(prefix, rest string) string {
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		return prefix + "/" + rest
	}
	return rest
}

// MetaPrefix is the key prefix of the non-segment objects: <prefix>/_shale/.
func MetaPrefix(prefix string) string { return joinPrefix(prefix, metaDir+"/") }

// FormatMarkerKey is the key of the marker of format version v:
// <prefix>/_shale/format/v<N>.json. A writer of version v writes it once
// and never changes it; the bucket's version is the highest marker.
func FormatMarkerKey(prefix string, v int) string {
	return joinPrefix(prefix, fmt.Sprintf("%s/format/v%d.json", metaDir, v))
}

// FormatMarker is the body of a format marker.
type FormatMarker struct {
	FormatVersion int       `json:"format_version"`
	WrittenBy     string    `json:"written_by"`
	CreatedAt     time.Time `json:"created_at"`
}

// EncodeFormatMarker returns m as stored.
func EncodeFormatMarker(m FormatMarker) []byte { return mustJSON(m) }

// DecodeFormatMarker parses a format marker read from the bucket.
func DecodeFormatMarker(b []byte) (FormatMarker, error) {
	var m FormatMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return FormatMarker{}, fmt.Errorf("%w: format marker: %w", ErrBadFormat, err)
	}
	if m.FormatVersion < 1 {
		return FormatMarker{}, fmt.Errorf("%w: format version %d", ErrBadFormat, m.FormatVersion)
	}
	return m, nil
}

// parseFormatMarkerKey returns N of a key <prefix>/_shale/format/v<N>.json.
func parseFormatMarkerKey(prefix, key string) (int, bool) {
	rest, ok := strings.CutPrefix(key, joinPrefix(prefix, metaDir+"/format/v"))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, ".json"))
	if err != nil || n < 1 || !strings.HasSuffix(rest, ".json") {
		return 0, false
	}
	return n, true
}

// TopicDescriptor is what the segments do not say of a topic: its
// partition count, replication factor and explicit configs. One is
// written for each tiered topic whenever these change, as a new object.
type TopicDescriptor struct {
	FormatVersion     int               `json:"format_version"`
	Topic             string            `json:"topic"`
	TopicID           string            `json:"topic_id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
	CreatedAt         time.Time         `json:"created_at"`
}

// DescriptorFor returns t's descriptor stamped at now.
func DescriptorFor(t controlplane.Topic, now time.Time) TopicDescriptor {
	cfg := maps.Clone(t.Configs)
	if cfg == nil {
		cfg = map[string]string{}
	}
	return TopicDescriptor{FormatVersion: FormatVersion, Topic: t.Name, TopicID: t.ID.Hex(), Partitions: t.Partitions,
		ReplicationFactor: t.ReplicationFactor, Configs: cfg, CreatedAt: now.UTC()}
}

// sameTopic reports whether two descriptors describe the topic alike
// (their times aside).
func (d TopicDescriptor) sameTopic(o TopicDescriptor) bool {
	return d.Topic == o.Topic && d.TopicID == o.TopicID && d.Partitions == o.Partitions &&
		d.ReplicationFactor == o.ReplicationFactor && maps.Equal(d.Configs, o.Configs)
}

// DescriptorPrefix is the folder of one topic's descriptors:
// <prefix>/_shale/topics/<topic>-<topicIdHex>/.
func DescriptorPrefix(prefix, topic string, id controlplane.TopicID) string {
	return joinPrefix(prefix, fmt.Sprintf("%s/topics/%s-%s/", metaDir, topic, id.Hex()))
}

// DescriptorKey is the key of a descriptor written at now: the folder,
// then the time in Unix milliseconds, 20 digits, so that the newest lists
// last: <prefix>/_shale/topics/<topic>-<topicIdHex>/<ms, 20 digits>.json.
func DescriptorKey(prefix, topic string, id controlplane.TopicID, now time.Time) string {
	return fmt.Sprintf("%s%020d.json", DescriptorPrefix(prefix, topic, id), now.UnixMilli())
}

// EncodeDescriptor returns d as stored.
func EncodeDescriptor(d TopicDescriptor) []byte { return mustJSON(d) }

// DecodeDescriptor parses a topic descriptor read from the bucket and
// checks it: a valid topic name and id, at least one partition, a
// replication factor of at least 1, a known format version.
func DecodeDescriptor(b []byte) (TopicDescriptor, error) {
	var d TopicDescriptor
	if err := json.Unmarshal(b, &d); err != nil {
		return TopicDescriptor{}, fmt.Errorf("%w: topic descriptor: %w", ErrBadFormat, err)
	}
	if err := controlplane.ValidateTopicName(d.Topic); err != nil {
		return TopicDescriptor{}, fmt.Errorf("%w: topic descriptor: %w", ErrBadFormat, err)
	}
	if _, err := controlplane.ParseTopicID(d.TopicID); err != nil {
		return TopicDescriptor{}, fmt.Errorf("%w: topic descriptor: topic id: %w", ErrBadFormat, err)
	}
	if d.Partitions < 1 || d.ReplicationFactor < 1 || d.FormatVersion < 1 {
		return TopicDescriptor{}, fmt.Errorf("%w: topic descriptor of %q: %d partitions, replication factor %d, format %d",
			ErrBadFormat, d.Topic, d.Partitions, d.ReplicationFactor, d.FormatVersion)
	}
	if d.Configs == nil {
		d.Configs = map[string]string{}
	}
	return d, nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("restore: marshal: %v", err))
	}
	return b
}
