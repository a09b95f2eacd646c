package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
)

// ForkDescriptor is the bucket's record of a fork: which of the source's
// objects the fork's history lists, per partition, written once at
// <prefix>/_shale/forks/<topic>-<topicIdHex>.json before the fork's
// remote records. A restore of the fork lists them again, so that a
// restored cluster counts them as the fork's references (it reads the
// fork's history, and neither topic's deletes take objects the other
// lists).
type ForkDescriptor struct {
	FormatVersion int                       `json:"format_version"`
	Topic         string                    `json:"topic"`
	TopicID       string                    `json:"topic_id"`
	Source        string                    `json:"source"`
	SourceID      string                    `json:"source_id"`
	Partitions    []ForkDescriptorPartition `json:"partitions"`
	CreatedAt     time.Time                 `json:"created_at"`
}

// ForkDescriptorPartition is one partition of a fork: its cut and the
// source's segments it lists, as the fork's records list them.
type ForkDescriptorPartition struct {
	Partition int32           `json:"partition"`
	Cut       int64           `json:"cut"`
	Segments  []ForkReference `json:"segments"`
}

// ForkReference is one of the fork's records of a source segment; the
// end offset, size and max timestamp are the record's (stopping at the
// cut), the object bounds the objects' own when they go further.
type ForkReference struct {
	SegmentID       string                    `json:"segment_id"`
	BaseOffset      int64                     `json:"base_offset"`
	EndOffset       int64                     `json:"end_offset"`
	MaxTimestamp    int64                     `json:"max_timestamp"`
	Size            int64                     `json:"size"`
	ObjectEndOffset int64                     `json:"object_end_offset,omitempty"`
	ObjectSize      int64                     `json:"object_size,omitempty"`
	LeaderEpoch     int32                     `json:"leader_epoch"`
	SegmentEpochs   []controlplane.EpochEntry `json:"segment_epochs"`
	Objects         []string                  `json:"objects"`
}

// ForkDescriptorKey is <prefix>/_shale/forks/<topic>-<topicIdHex>.json.
func ForkDescriptorKey(prefix, topic string, id controlplane.TopicID) string {
	return joinPrefix(prefix, fmt.Sprintf("%s/forks/%s-%s.json", metaDir, topic, id.Hex()))
}

func referenceOf(s controlplane.RemoteSegment) ForkReference {
	return ForkReference{SegmentID: s.SegmentID, BaseOffset: s.BaseOffset, EndOffset: s.EndOffset, MaxTimestamp: s.MaxTimestamp,
		Size: s.Size, ObjectEndOffset: s.ObjectEndOffset, ObjectSize: s.ObjectSize, LeaderEpoch: s.LeaderEpoch,
		SegmentEpochs: slices.Clone(s.SegmentEpochs), Objects: slices.Clone(s.Objects)}
}

// Record returns the fork's remote segment record of r (CopyFinished).
func (r ForkReference) Record(id controlplane.TopicID, p int32) controlplane.RemoteSegment {
	return controlplane.RemoteSegment{TopicID: id, Partition: p, SegmentID: r.SegmentID, BaseOffset: r.BaseOffset,
		EndOffset: r.EndOffset, MaxTimestamp: r.MaxTimestamp, Size: r.Size, ObjectEndOffset: r.ObjectEndOffset,
		ObjectSize: r.ObjectSize, LeaderEpoch: r.LeaderEpoch, SegmentEpochs: slices.Clone(r.SegmentEpochs),
		State: controlplane.CopyFinished, Objects: slices.Clone(r.Objects)}
}

// EncodeForkDescriptor returns d as stored.
func EncodeForkDescriptor(d ForkDescriptor) []byte { return mustJSON(d) }

// DecodeForkDescriptor parses a fork descriptor read from the bucket and
// checks it: valid topic names and ids, a known format version, and
// references with segment ids, offsets in order below their partition's
// cut, object bounds at or above the record's and at least one object.
func DecodeForkDescriptor(b []byte) (ForkDescriptor, error) {
	var d ForkDescriptor
	if err := json.Unmarshal(b, &d); err != nil {
		return ForkDescriptor{}, fmt.Errorf("%w: fork descriptor: %w", ErrBadFormat, err)
	}
	bad := func(why string, args ...any) (ForkDescriptor, error) {
		return ForkDescriptor{}, fmt.Errorf("%w: fork descriptor of %q: %s", ErrBadFormat, d.Topic, fmt.Sprintf(why, args...))
	}
	if d.FormatVersion < 1 {
		return bad("format %d", d.FormatVersion)
	}
	for _, n := range []string{d.Topic, d.Source} {
		if err := controlplane.ValidateTopicName(n); err != nil {
			return bad("%v", err)
		}
	}
	for _, id := range []string{d.TopicID, d.SourceID} {
		if _, err := controlplane.ParseTopicID(id); err != nil {
			return bad("topic id: %v", err)
		}
	}
	for _, p := range d.Partitions {
		if p.Partition < 0 {
			return bad("partition %d", p.Partition)
		}
		next := int64(-1)
		for _, r := range p.Segments {
			switch {
			case r.SegmentID == "" || strings.ContainsAny(r.SegmentID, ".-/*> "):
				return bad("segment id %q", r.SegmentID)
			case r.BaseOffset < 0 || r.EndOffset < r.BaseOffset || r.BaseOffset <= next || r.EndOffset >= p.Cut:
				return bad("partition %d segment %s: offsets [%d, %d] (cut %d)", p.Partition, r.SegmentID, r.BaseOffset, r.EndOffset, p.Cut)
			case r.Size < 0 || (r.ObjectSize != 0 && (r.ObjectSize < r.Size || r.ObjectEndOffset < r.EndOffset)):
				return bad("partition %d segment %s: sizes", p.Partition, r.SegmentID)
			case len(r.Objects) == 0:
				return bad("partition %d segment %s: no object", p.Partition, r.SegmentID)
			}
			next = r.EndOffset
		}
	}
	return d, nil
}

// writeForkDescriptor puts d under its key, once.
func (r *Restorer) writeForkDescriptor(ctx context.Context, d ForkDescriptor, id controlplane.TopicID) error {
	key := ForkDescriptorKey(r.prefix, d.Topic, id)
	b := EncodeForkDescriptor(d)
	if err := r.bucket.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("restore: put %s: %w", key, err)
	}
	return nil
}

// readForkDescriptor reads the fork descriptor of topic (name, id);
// found is false when the topic is no fork.
func (r *Restorer) readForkDescriptor(ctx context.Context, name string, id controlplane.TopicID) (ForkDescriptor, bool, error) {
	key := ForkDescriptorKey(r.prefix, name, id)
	data, err := readSmall(ctx, r.bucket, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return ForkDescriptor{}, false, nil
	}
	if err != nil {
		return ForkDescriptor{}, false, err
	}
	d, err := DecodeForkDescriptor(data)
	if err != nil {
		return ForkDescriptor{}, false, fmt.Errorf("%s: %w", key, err)
	}
	return d, true, nil
}

// forkReferences reads the fork descriptor of a topic being restored, if
// it is a fork, and returns by partition the records of the source's
// segments its history lists, those whose objects are all still in the
// bucket; what is gone is added to out.Missing, and each partition's
// detail is moved to start at the fork's log start.
func (r *Restorer) forkReferences(ctx context.Context, img *TopicImage, out *adminapi.RestoredTopic) (map[int32][]controlplane.RemoteSegment, error) {
	d, found, err := r.readForkDescriptor(ctx, img.Name, img.ID)
	if err != nil || !found {
		return nil, err
	}
	refs := map[int32][]controlplane.RemoteSegment{}
	for _, dp := range d.Partitions {
		if dp.Partition >= out.Partitions {
			continue
		}
		for _, ref := range dp.Segments {
			var gone []string
			for _, k := range ref.Objects {
				if _, err := r.bucket.Stat(ctx, k); errors.Is(err, objstore.ErrNotFound) {
					gone = append(gone, k)
				} else if err != nil {
					return nil, fmt.Errorf("restore: stat %s: %w", k, err)
				}
			}
			if len(gone) > 0 {
				out.Missing = append(out.Missing, fmt.Sprintf("partition %d: the fork's reference to %s's segment %s [%d, %d]: objects gone (%s): lost",
					dp.Partition, d.Source, ref.SegmentID, ref.BaseOffset, ref.EndOffset, strings.Join(gone, ", ")))
				continue
			}
			refs[dp.Partition] = append(refs[dp.Partition], ref.Record(img.ID, dp.Partition))
		}
		if rs := refs[dp.Partition]; len(rs) > 0 {
			for i := range out.Partition {
				if rp := &out.Partition[i]; rp.Partition == dp.Partition {
					rp.LogStartOffset = rs[0].BaseOffset
					rp.NextOffset = max(rp.NextOffset, rs[len(rs)-1].EndOffset+1)
					rp.Segments += len(rs)
				}
			}
		}
	}
	out.Missing = slices.DeleteFunc(out.Missing, func(m string) bool {
		return strings.HasSuffix(m, ": no uploaded segment: restored empty") && len(refs) > 0
	})
	return refs, nil
}
