package restore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/tiering"
)

// Inventory is what a bucket holds, read by Scan: its format version and,
// by topic id, each topic's descriptor and complete segments.
type Inventory struct {
	// FormatVersion is the highest format marker's version, 0 when the
	// bucket has none (written before markers, or by no tiered topic yet).
	FormatVersion int
	Topics        map[controlplane.TopicID]*TopicImage
	// Problems are what Scan could not use, each naming the object.
	Problems []string
}

// TopicImage is one topic id's objects.
type TopicImage struct {
	Name string
	ID   controlplane.TopicID
	// Descriptor is the newest descriptor, nil when there is none.
	Descriptor *TopicDescriptor
	// Partitions holds the manifests of the complete segments (every
	// object the manifest lists is in the bucket with its size), by
	// partition.
	Partitions map[int32][]tiering.Manifest
}

// PartitionIDs returns the partitions with at least one complete segment, ascending.
func (t *TopicImage) PartitionIDs() []int32 {
	return slices.Sorted(maps.Keys(t.Partitions))
}

// SegmentPath is a segment object's key parsed: the topic, its id and
// the partition (the folder) and the file name.
type SegmentPath struct {
	Topic     string
	TopicID   controlplane.TopicID
	Partition int32
	File      string
}

// ParseSegmentKey parses <prefix>/<hash>/<topic>-<topicIdHex>/<partition>/<file>,
// checking the hash (tiering.PartitionPrefix); false for any other key.
func ParseSegmentKey(prefix, key string) (SegmentPath, bool) {
	rest := key
	if p := strings.Trim(prefix, "/"); p != "" {
		var ok bool
		if rest, ok = strings.CutPrefix(key, p+"/"); !ok {
			return SegmentPath{}, false
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || len(parts[0]) != 8 {
		return SegmentPath{}, false
	}
	dash := strings.LastIndexByte(parts[1], '-')
	if dash < 1 {
		return SegmentPath{}, false
	}
	id, err := controlplane.ParseTopicID(parts[1][dash+1:])
	if err != nil || len(parts[1][dash+1:]) != 32 {
		return SegmentPath{}, false
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != parts[2] {
		return SegmentPath{}, false
	}
	sp := SegmentPath{Topic: parts[1][:dash], TopicID: id, Partition: int32(p), File: parts[3]}
	if tiering.PartitionPrefix(prefix, sp.Topic, id, sp.Partition) != strings.TrimSuffix(key, sp.File) {
		return SegmentPath{}, false
	}
	return sp, true
}

// parseDescriptorKey parses <prefix>/_shale/topics/<topic>-<idHex>/<ms>.json.
func parseDescriptorKey(prefix, key string) (string, controlplane.TopicID, bool) {
	rest, ok := strings.CutPrefix(key, joinPrefix(prefix, metaDir+"/topics/"))
	if !ok {
		return "", controlplane.TopicID{}, false
	}
	dir, file, ok := strings.Cut(rest, "/")
	if !ok || !strings.HasSuffix(file, ".json") || strings.Contains(file, "/") {
		return "", controlplane.TopicID{}, false
	}
	dash := strings.LastIndexByte(dir, '-')
	if dash < 1 {
		return "", controlplane.TopicID{}, false
	}
	id, err := controlplane.ParseTopicID(dir[dash+1:])
	if err != nil {
		return "", controlplane.TopicID{}, false
	}
	return dir[:dash], id, true
}

// Scan lists the bucket under prefix once and reads every segment
// manifest, the newest descriptor of each topic and the format markers.
// A manifest that does not parse, disagrees with its key, or lists an
// object missing from the bucket (or of another size) leaves its segment
// out and is reported in Problems; only a failing LIST or GET is an error.
// A bucket whose format version is above FormatVersion is refused.
func Scan(ctx context.Context, b objstore.Bucket, prefix string) (*Inventory, error) {
	inv := &Inventory{Topics: map[controlplane.TopicID]*TopicImage{}}
	sizes := map[string]int64{}
	var manifests []string
	descriptors := map[controlplane.TopicID]string{}
	descNames := map[controlplane.TopicID]string{}
	var markers []string
	listPrefix := ""
	if p := strings.Trim(prefix, "/"); p != "" {
		listPrefix = p + "/"
	}
	err := b.List(ctx, listPrefix, func(a objstore.Attrs) error {
		sizes[a.Key] = a.Size
		if v, ok := parseFormatMarkerKey(prefix, a.Key); ok {
			inv.FormatVersion = max(inv.FormatVersion, v)
			markers = append(markers, a.Key)
			return nil
		}
		if name, id, ok := parseDescriptorKey(prefix, a.Key); ok {
			if a.Key > descriptors[id] {
				descriptors[id], descNames[id] = a.Key, name
			}
			return nil
		}
		if sp, ok := ParseSegmentKey(prefix, a.Key); ok && strings.HasSuffix(sp.File, "."+string(tiering.KindManifest)) {
			manifests = append(manifests, a.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("restore: list the bucket: %w", err)
	}
	if inv.FormatVersion > FormatVersion {
		return nil, fmt.Errorf("%w: the bucket's format version is %d; this shale reads up to %d", ErrBadFormat, inv.FormatVersion, FormatVersion)
	}
	for _, k := range markers {
		data, err := readSmall(ctx, b, k)
		if err != nil {
			return nil, err
		}
		if _, err := DecodeFormatMarker(data); err != nil {
			inv.Problems = append(inv.Problems, fmt.Sprintf("%s: %v", k, err))
		}
	}
	image := func(name string, id controlplane.TopicID) *TopicImage {
		t := inv.Topics[id]
		if t == nil {
			t = &TopicImage{Name: name, ID: id, Partitions: map[int32][]tiering.Manifest{}}
			inv.Topics[id] = t
		}
		return t
	}
	for _, k := range manifests {
		sp, _ := ParseSegmentKey(prefix, k)
		data, err := readSmall(ctx, b, k)
		if err != nil {
			return nil, err
		}
		m, err := tiering.DecodeManifest(data)
		if err != nil {
			inv.Problems = append(inv.Problems, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		if why := manifestMismatch(m, sp, k, sizes); why != "" {
			inv.Problems = append(inv.Problems, fmt.Sprintf("%s: segment [%d, %d] left out: %s", k, m.BaseOffset, m.EndOffset, why))
			continue
		}
		t := image(sp.Topic, sp.TopicID)
		t.Partitions[sp.Partition] = append(t.Partitions[sp.Partition], m)
	}
	for id, k := range descriptors {
		data, err := readSmall(ctx, b, k)
		if err != nil {
			return nil, err
		}
		d, err := DecodeDescriptor(data)
		if err == nil && (d.Topic != descNames[id] || d.TopicID != id.Hex()) {
			err = fmt.Errorf("%w: names %s-%s, stored under %s-%s", ErrBadFormat, d.Topic, d.TopicID, descNames[id], id.Hex())
		}
		if err != nil {
			inv.Problems = append(inv.Problems, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		image(d.Topic, id).Descriptor = &d
	}
	for _, t := range inv.Topics {
		for p, ms := range t.Partitions {
			slices.SortFunc(ms, func(a, b tiering.Manifest) int {
				return cmp.Or(cmp.Compare(a.BaseOffset, b.BaseOffset), cmp.Compare(a.LeaderEpoch, b.LeaderEpoch))
			})
			t.Partitions[p] = ms
		}
	}
	slices.Sort(inv.Problems)
	return inv, nil
}

// manifestMismatch says why a manifest cannot be used ("" when it can):
// it names another partition than its key, or an object it lists is
// missing or of another size.
func manifestMismatch(m tiering.Manifest, sp SegmentPath, key string, sizes map[string]int64) string {
	if m.Topic != sp.Topic || m.TopicID != sp.TopicID.Hex() || m.Partition != sp.Partition {
		return fmt.Sprintf("the manifest names %s-%s/%d", m.Topic, m.TopicID, m.Partition)
	}
	dir := key[:strings.LastIndexByte(key, '/')+1]
	for kind, o := range m.Objects {
		if !strings.HasPrefix(o.Key, dir) {
			return fmt.Sprintf("object %s (%s) is outside the partition's folder", o.Key, kind)
		}
		size, ok := sizes[o.Key]
		if !ok {
			return fmt.Sprintf("object %s (%s) is missing", o.Key, kind)
		}
		if size != o.Size {
			return fmt.Sprintf("object %s (%s) holds %d bytes, the manifest says %d", o.Key, kind, size, o.Size)
		}
	}
	return ""
}
