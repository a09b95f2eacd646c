package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// resolve turns pos into an offset for every partition of topic, through
// ListOffsets: the log start (remote included), the high watermark, or the
// first offset at or after a time (the high watermark when none is).
// Offsets are clamped to [start, end].
func resolve(ctx context.Context, adm *kadm.Client, topic string, pos Position) (map[int32]int64, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err := listErr(topic, starts, err); err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err := listErr(topic, ends, err); err != nil {
		return nil, err
	}
	var at kadm.ListedOffsets
	if pos.kind == posTime {
		at, err = adm.ListOffsetsAfterMilli(ctx, pos.at.UnixMilli(), topic)
		if err := listErr(topic, at, err); err != nil {
			return nil, err
		}
	}
	out := map[int32]int64{}
	for p, end := range ends[topic] {
		start := starts[topic][p].Offset
		var o int64
		switch pos.kind {
		case posStart:
			o = start
		case posEnd:
			o = end.Offset
		case posOffset:
			o = pos.offset
		case posTime:
			o = at[topic][p].Offset
		}
		out[p] = min(max(o, start), end.Offset)
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
