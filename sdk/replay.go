package sdk

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// errStop ends a replay early on the iterator's break.
var errStop = errors.New("sdk: replay stopped")

// Replay reads topic's records from from up to, not including, to, in every
// partition, and calls fn with each, in offset order per partition
// (partitions interleave). Offsets below the node's local disk are served
// from the cold tier through the normal fetch path, so a replay of months
// of history needs nothing but a Kafka connection.
//
// Bounds resolve per partition when Replay starts: AtOffset(o) is offset o,
// AtTime(t) the first record at or after t (so records before t only, when
// it is to), Start the log start, End the high watermark. Records appended
// after Replay starts are not read, so Replay always ends: a partition is
// done when its fetch position reaches its bound, transaction markers and
// (under read_committed) aborted records included, which fn never sees. It returns nil
// once every partition reached its bound, fn's error if fn fails (no more
// calls), or ctx's. The caller owns each record.
//
// Replay uses its own connections (the seeds and client options of c)
// without a group: it neither moves c's positions nor commits. It may run
// concurrently with Poll and other replays.
func (c *Consumer) Replay(ctx context.Context, topic string, from, to Position, fn func(*Record) error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return replay(ctx, c.cfg, c.adm, topic, from, to, fn)
}

// ReplayRecords is Replay as an iterator: it yields each record with a nil
// error, and at most one final non-nil error. Breaking out of the loop ends
// the replay.
func (c *Consumer) ReplayRecords(ctx context.Context, topic string, from, to Position) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		err := c.Replay(ctx, topic, from, to, func(r *Record) error {
			if !yield(r, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(nil, err)
		}
	}
}

// replayRange is one partition's half-open offset range [from, to).
type replayRange struct{ from, to int64 }

// replayRanges resolves from and to on every partition of topic and drops
// the empty ranges.
func replayRanges(ctx context.Context, adm *kadm.Client, topic string, from, to Position) (map[int32]replayRange, error) {
	if from.kind == PositionEnd || to.kind == PositionStart {
		return nil, fmt.Errorf("%w: from %v to %v", ErrInvalidRange, from, to)
	}
	if from.kind == to.kind && (from.kind == PositionOffset && from.offset > to.offset || from.kind == PositionTime && from.at.After(to.at)) {
		return nil, fmt.Errorf("%w: from %v is after to %v", ErrInvalidRange, from, to)
	}
	starts, err := resolve(ctx, adm, topic, from)
	if err != nil {
		return nil, err
	}
	ends, err := resolve(ctx, adm, topic, to)
	if err != nil {
		return nil, err
	}
	out := map[int32]replayRange{}
	for p, s := range starts {
		if e, ok := ends[p]; ok && e > s {
			out[p] = replayRange{s, e}
		}
	}
	return out, nil
}

func replay(ctx context.Context, cfg config, adm *kadm.Client, topic string, from, to Position, fn func(*Record) error) error {
	ranges, err := replayRanges(ctx, adm, topic, from, to)
	if err != nil || len(ranges) == 0 {
		return err
	}
	parts := map[int32]kgo.Offset{}
	for p, r := range ranges {
		parts[p] = kgo.NewOffset().At(r.from)
	}
	// Control records (transaction markers) come back so that a partition
	// is done when its fetch position reaches its bound, which may lie past
	// its last data record (a COMMIT or ABORT marker, aborted records under
	// read_committed); fn never sees them.
	o := append(cfg.clientOpts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), kgo.KeepControlRecords())
	cl, err := kgo.NewClient(append(o, cfg.extra...)...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	defer cl.Close()
	for len(ranges) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var errs []error
		for _, fe := range fs.Errors() {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", fe.Topic, fe.Partition, fe.Err))
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		var done []int32
		for _, r := range fs.Records() {
			rg, ok := ranges[r.Partition]
			if !ok {
				continue
			}
			if r.Offset < rg.to && !r.Attrs.IsControl() {
				if err := fn(r); err != nil {
					return err
				}
			}
			if r.Offset+1 >= rg.to { // the position reached the bound
				delete(ranges, r.Partition)
				done = append(done, r.Partition)
			}
		}
		if len(done) > 0 {
			cl.PauseFetchPartitions(map[string][]int32{topic: done})
		}
	}
	return nil
}
