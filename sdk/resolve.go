package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetRange is a partition's log start offset (the first offset retained,
// remote or local) and its end (the high watermark: the offset the next
// record will take).
type OffsetRange struct {
	Start int64
	End   int64
}

// PartitionOffsets returns the log start and end of the partitions of
// topic: those named, or every one when none is. A topic that does not
// exist is ErrTopicNotFound, a named partition that does not
// ErrPartitionNotFound.
func (a *Admin) PartitionOffsets(ctx context.Context, topic string, partitions ...int32) (map[int32]OffsetRange, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	return offsetRanges(ctx, a.adm, topic, partitions)
}

// ResolveOffsets returns pos as an offset in each partition of topic (those
// named, or every one), through ListOffsets: the log start, the high
// watermark, an offset, n before the end, or the first offset at or after a
// time (the high watermark when there is none). Offsets are clamped to the
// partition's [start, end]. Errors as PartitionOffsets.
func (a *Admin) ResolveOffsets(ctx context.Context, topic string, pos Position, partitions ...int32) (map[int32]int64, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	ranges, err := offsetRanges(ctx, a.adm, topic, partitions)
	if err != nil {
		return nil, err
	}
	return resolveIn(ctx, a.adm, topic, pos, ranges)
}

// resolve is ResolveOffsets on every partition of topic.
func resolve(ctx context.Context, adm *kadm.Client, topic string, pos Position) (map[int32]int64, error) {
	ranges, err := offsetRanges(ctx, adm, topic, nil)
	if err != nil {
		return nil, err
	}
	return resolveIn(ctx, adm, topic, pos, ranges)
}

// offsetRanges lists the start and end offsets of topic's partitions (all
// of them when parts is empty).
func offsetRanges(ctx context.Context, adm *kadm.Client, topic string, parts []int32) (map[int32]OffsetRange, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err := listErr(topic, starts, err); err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err := listErr(topic, ends, err); err != nil {
		return nil, err
	}
	out := map[int32]OffsetRange{}
	for p, end := range ends[topic] {
		out[p] = OffsetRange{Start: starts[topic][p].Offset, End: end.Offset}
	}
	if len(parts) == 0 {
		return out, nil
	}
	sub := make(map[int32]OffsetRange, len(parts))
	for _, p := range parts {
		r, ok := out[p]
		if !ok {
			return nil, fmt.Errorf("%w: %s has no partition %d", ErrPartitionNotFound, topic, p)
		}
		sub[p] = r
	}
	return sub, nil
}

// resolveIn resolves pos in each partition of ranges.
func resolveIn(ctx context.Context, adm *kadm.Client, topic string, pos Position, ranges map[int32]OffsetRange) (map[int32]int64, error) {
	var at kadm.ListedOffsets
	if pos.kind == PositionTime {
		var err error
		at, err = adm.ListOffsetsAfterMilli(ctx, pos.at.UnixMilli(), topic)
		if err := listErr(topic, at, err); err != nil {
			return nil, err
		}
	}
	out := make(map[int32]int64, len(ranges))
	for p, r := range ranges {
		var o int64
		switch pos.kind {
		case PositionStart:
			o = r.Start
		case PositionEnd:
			o = r.End
		case PositionOffset:
			o = pos.offset
		case PositionFromEnd:
			o = r.End - pos.offset
		case PositionTime:
			o = r.End // no record at or after the time
			if l, ok := at.Lookup(topic, p); ok && l.Offset >= 0 {
				o = l.Offset
			}
		}
		out[p] = min(max(o, r.Start), r.End)
	}
	return out, nil
}

// listErr is the error of a kadm ListOffsets call on topic.
func listErr(topic string, l kadm.ListedOffsets, err error) error {
	if err == nil {
		err = l.Error()
	}
	if err == nil && len(l[topic]) == 0 {
		err = kerr.UnknownTopicOrPartition
	}
	return topicErr(topic, err)
}

// topicErr wraps err, adding ErrTopicNotFound when the broker says the
// topic does not exist.
func topicErr(topic string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return fmt.Errorf("%w: %s: %w", ErrTopicNotFound, topic, err)
	default:
		return fmt.Errorf("sdk: %s: %w", topic, err)
	}
}
