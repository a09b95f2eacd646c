package tiering

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shale-io/shale/controlplane"
)

// Manifest is the small JSON object written beside a segment's objects, so
// that the bucket alone describes what it holds.
type Manifest struct {
	Topic         string                    `json:"topic"`
	TopicID       string                    `json:"topic_id"`
	Partition     int32                     `json:"partition"`
	SegmentID     string                    `json:"segment_id"`
	BaseOffset    int64                     `json:"base_offset"`
	EndOffset     int64                     `json:"end_offset"`
	MaxTimestamp  int64                     `json:"max_timestamp"`
	LeaderEpoch   int32                     `json:"leader_epoch"`
	SegmentEpochs []controlplane.EpochEntry `json:"segment_epochs"`
	Objects       map[Kind]ManifestObject   `json:"objects"`
	CreatedAt     time.Time                 `json:"created_at"`
	// HighWatermark is the partition's high watermark when the segment
	// was uploaded (0 in manifests written before it was recorded): a
	// restore from the bucket alone says from it how many offsets, at
	// least, were never uploaded.
	HighWatermark int64 `json:"high_watermark,omitempty"`
}

// ManifestObject is one object of the segment.
type ManifestObject struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// EncodeEpochs writes leader-epoch entries in Kafka's leader-epoch-checkpoint
// format: version 0, the count, then "epoch start_offset" lines.
func EncodeEpochs(es []controlplane.EpochEntry) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(es))
	for _, e := range es {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return []byte(b.String())
}

// DecodeEpochs parses EncodeEpochs' output.
func DecodeEpochs(data []byte) ([]controlplane.EpochEntry, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("tiering: epochs: bad header")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("tiering: epochs: count %q for %d lines", lines[1], len(lines)-2)
	}
	out := make([]controlplane.EpochEntry, 0, n)
	for _, l := range lines[2:] {
		var e controlplane.EpochEntry
		if _, err := fmt.Sscanf(l, "%d %d", &e.Epoch, &e.StartOffset); err != nil {
			return nil, fmt.Errorf("tiering: epochs: line %q: %w", l, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func encodeManifest(m Manifest) []byte {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("tiering: marshal manifest: %v", err))
	}
	return b
}

// ErrBadManifest: a manifest.json from the bucket failed its checks.
var ErrBadManifest = errors.New("tiering: bad segment manifest")

// DecodeManifest parses a manifest.json read from the bucket (encodeManifest's
// output) and checks that it describes a segment: a topic id, offsets in
// order, a .log object, sizes that are not negative, and epoch entries in
// order.
func DecodeManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if _, err := controlplane.ParseTopicID(m.TopicID); err != nil {
		return Manifest{}, fmt.Errorf("%w: topic id: %w", ErrBadManifest, err)
	}
	if m.BaseOffset < 0 || m.EndOffset < m.BaseOffset || m.Partition < 0 {
		return Manifest{}, fmt.Errorf("%w: partition %d offsets [%d, %d]", ErrBadManifest, m.Partition, m.BaseOffset, m.EndOffset)
	}
	if _, ok := m.Objects[KindLog]; !ok {
		return Manifest{}, fmt.Errorf("%w: no .log object", ErrBadManifest)
	}
	for k, o := range m.Objects {
		if o.Size < 0 || o.Key == "" {
			return Manifest{}, fmt.Errorf("%w: object %s: key %q size %d", ErrBadManifest, k, o.Key, o.Size)
		}
	}
	for i, e := range m.SegmentEpochs {
		if i > 0 && (e.Epoch <= m.SegmentEpochs[i-1].Epoch || e.StartOffset < m.SegmentEpochs[i-1].StartOffset) {
			return Manifest{}, fmt.Errorf("%w: epoch entry %d out of order", ErrBadManifest, i)
		}
	}
	return m, nil
}
