package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// offsetKind says how an offsetSpec picks an offset in a partition.
type offsetKind int

const (
	offsetStart   offsetKind = iota // the log start offset
	offsetEnd                       // the end offset (high watermark)
	offsetExact                     // offset n
	offsetFromEnd                   // n before the end offset, not before the start
	offsetTime                      // the first offset whose timestamp is at or after n (ms)
)

// offsetSpec is a parsed position such as "start", "end", "42", "-10" or
// "@2026-01-02T15:04:05Z", shared by consume --offset/--until and group
// reset-offsets --to.
type offsetSpec struct {
	kind offsetKind
	n    int64
}

// parseOffsetSpec parses:
//
//	start | beginning | earliest | oldest   the log start
//	end | latest | newest                   the end (high watermark)
//	N                                       offset N
//	-N                                      N before the end
//	@TIME                                   the first record at or after TIME,
//	                                        TIME in ms since the epoch or RFC 3339
func parseOffsetSpec(s string) (offsetSpec, error) {
	switch strings.ToLower(s) {
	case "start", "beginning", "earliest", "oldest":
		return offsetSpec{kind: offsetStart}, nil
	case "end", "latest", "newest":
		return offsetSpec{kind: offsetEnd}, nil
	}
	if ts, ok := strings.CutPrefix(s, "@"); ok {
		ms, err := parseTimestamp(ts)
		if err != nil {
			return offsetSpec{}, err
		}
		return offsetSpec{kind: offsetTime, n: ms}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return offsetSpec{}, fmt.Errorf("%w: offset %q: want start, end, N, -N or @TIME", errUsage, s)
	}
	if n < 0 || strings.HasPrefix(s, "-") {
		return offsetSpec{kind: offsetFromEnd, n: -n}, nil
	}
	return offsetSpec{kind: offsetExact, n: n}, nil
}

// parseTimestamp reads milliseconds since the epoch or an RFC 3339 time.
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%w: time %q: want ms since the epoch or RFC 3339", errUsage, s)
	}
	return t.UnixMilli(), nil
}

// partitionBounds are a partition's log start and end offsets.
type partitionBounds struct{ start, end int64 }

// listBounds returns the start and end offsets of the topic's partitions
// (all of them when parts is empty).
func listBounds(ctx context.Context, adm *kadm.Client, topic string, parts []int32) (map[int32]partitionBounds, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(ends[topic]) == 0 {
		return nil, fmt.Errorf("%w: %q", errUnknownTopic, topic)
	}
	want := map[int32]bool{}
	for _, p := range parts {
		want[p] = true
	}
	out := map[int32]partitionBounds{}
	for p, e := range ends[topic] {
		if len(want) > 0 && !want[p] {
			continue
		}
		if errors.Is(e.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("%w %q", errUnknownTopic, topic)
		}
		if e.Err != nil {
			return nil, fmt.Errorf("%s/%d end offset: %w", topic, p, e.Err)
		}
		s := starts[topic][p]
		if s.Err != nil {
			return nil, fmt.Errorf("%s/%d start offset: %w", topic, p, s.Err)
		}
		out[p] = partitionBounds{start: s.Offset, end: e.Offset}
	}
	for p := range want {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("%w: %s has no partition %d", errUnknownTopic, topic, p)
		}
	}
	return out, nil
}

// resolve turns the spec into an offset per partition, clamped into
// [start, end] except for an exact offset past the end, which is kept (a
// consumer then waits for it).
func (s offsetSpec) resolve(ctx context.Context, adm *kadm.Client, topic string, bounds map[int32]partitionBounds) (map[int32]int64, error) {
	out := make(map[int32]int64, len(bounds))
	var byTime kadm.ListedOffsets
	if s.kind == offsetTime {
		var err error
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, s.n, topic); err != nil {
			return nil, err
		}
	}
	for p, b := range bounds {
		switch s.kind {
		case offsetStart:
			out[p] = b.start
		case offsetEnd:
			out[p] = b.end
		case offsetExact:
			out[p] = max(s.n, b.start)
		case offsetFromEnd:
			out[p] = max(b.end-s.n, b.start)
		case offsetTime:
			o, ok := byTime.Lookup(topic, p)
			if !ok || o.Err != nil || o.Offset < 0 {
				out[p] = b.end // no record at or after the time
				continue
			}
			out[p] = min(max(o.Offset, b.start), b.end)
		}
	}
	return out, nil
}

// parsePartitions reads "0,2,5" (empty means all).
func parsePartitions(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: partition %q", errUsage, f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}
