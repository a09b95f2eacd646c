package sdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumer reads records, either as a member of a consumer group
// (WithGroup), or from partitions it picks itself (WithTopics,
// WithAssignment). Poll, Commit and Seek are meant for one goroutine, the
// one that processes records; Close and Assigned may be called from any.
type Consumer struct {
	cl    *kgo.Client
	adm   *kadm.Client
	cfg   config
	group string

	// mu guards assigned, the group's current assignment (group mode).
	mu       sync.Mutex
	assigned map[string]map[int32]bool

	closed atomic.Bool
}

// NewConsumer returns a consumer. It reads through Poll what WithGroup
// (whose topics must not be empty), WithTopics or WithAssignment name; a group consumer
// joins the group on the first Poll. A consumer given none of them is for
// Replay alone (each Replay names its topic): its Poll and Seek return
// ErrNoSubscription.
func NewConsumer(opts ...Option) (*Consumer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.group != "" && len(cfg.topics) == 0 {
		return nil, fmt.Errorf("%w: WithGroup names no topic", ErrInvalidOption)
	}
	if cfg.group != "" && len(cfg.assignment) > 0 {
		return nil, fmt.Errorf("%w: WithGroup and WithAssignment exclude each other", ErrInvalidOption)
	}
	c := &Consumer{cfg: cfg, group: cfg.group, assigned: map[string]map[int32]bool{}}
	o := cfg.clientOpts()
	o = append(o, kgo.ConsumeResetOffset(cfg.startAt.KgoOffset()))
	switch {
	case cfg.group != "":
		o = append(o, kgo.ConsumerGroup(cfg.group), kgo.ConsumeTopics(cfg.topics...),
			kgo.OnPartitionsAssigned(c.onAssigned), kgo.OnPartitionsRevoked(c.onRevoked), kgo.OnPartitionsLost(c.onLost))
		if cfg.autoCommit {
			o = append(o, kgo.AutoCommitInterval(cfg.commitEvery))
		} else {
			o = append(o, kgo.DisableAutoCommit())
		}
	case len(cfg.assignment) > 0:
		parts := map[string]map[int32]kgo.Offset{}
		for t, ps := range cfg.assignment {
			parts[t] = map[int32]kgo.Offset{}
			for p, pos := range ps {
				parts[t][p] = pos.KgoOffset()
			}
		}
		o = append(o, kgo.ConsumePartitions(parts))
	default:
		o = append(o, kgo.ConsumeTopics(cfg.topics...))
	}
	cl, err := kgo.NewClient(append(o, cfg.extra...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	c.cl, c.adm = cl, kadm.NewClient(cl)
	return c, nil
}

// replayOnly reports a consumer made without topics, group or assignment.
func (c *Consumer) replayOnly() bool { return len(c.cfg.topics) == 0 && len(c.cfg.assignment) == 0 }

// onAssigned, onRevoked and onLost track the group assignment; kgo calls
// them serially, and before a revoke it commits polled records when
// auto-commit is on.
func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, a map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range a {
		if c.assigned[t] == nil {
			c.assigned[t] = map[int32]bool{}
		}
		for _, p := range ps {
			c.assigned[t][p] = true
		}
	}
}

func (c *Consumer) onRevoked(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
	if c.cfg.autoCommit {
		// As kgo's default revoke does: keep what was processed.
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && c.cfg.logger != nil {
			c.cfg.logger.Warn("commit on revoke failed", "group", c.group, "err", err)
		}
	}
	c.onLost(ctx, cl, r)
}

func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, r map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range r {
		for _, p := range ps {
			delete(c.assigned[t], p)
		}
		if len(c.assigned[t]) == 0 {
			delete(c.assigned, t)
		}
	}
}

// Assigned returns the partitions this group member owns now, sorted; nil
// for a consumer without a group. The caller owns the returned map.
func (c *Consumer) Assigned() map[string][]int32 {
	if c.group == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]int32{}
	for t, ps := range c.assigned {
		out[t] = slices.Sorted(maps.Keys(ps))
	}
	return out
}

// Poll waits for records and returns those buffered, in offset order per
// partition; the caller owns them. It returns when records arrive or ctx
// ends. err joins the fetch errors (ctx's error among them); records may
// come with an error.
func (c *Consumer) Poll(ctx context.Context) ([]*Record, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.replayOnly() {
		return nil, ErrNoSubscription
	}
	fs := c.cl.PollFetches(ctx)
	if fs.IsClientClosed() {
		return nil, ErrClosed
	}
	var errs []error
	for _, fe := range fs.Errors() {
		if fe.Topic == "" {
			errs = append(errs, fe.Err)
		} else {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", fe.Topic, fe.Partition, fe.Err))
		}
	}
	return fs.Records(), errors.Join(errs...)
}

// Commit commits, for the group, the offsets after records; with no records,
// after every record polled so far. Manual commit (WithAutoCommit(false))
// calls it after processing; with auto-commit it commits sooner. Offsets
// never move backwards through Commit.
func (c *Consumer) Commit(ctx context.Context, records ...*Record) error {
	if c.group == "" {
		return ErrNoGroup
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if len(records) == 0 {
		return c.cl.CommitUncommittedOffsets(ctx)
	}
	return c.cl.CommitRecords(ctx, records...)
}

// Seek moves partition of topic to pos: the next Poll returns records from
// there. A time resolves to the first record at or after it, through the
// broker's time index (remote segments included). In group mode the
// partition must be assigned to this member (ErrNotAssigned); without a
// group it must be one the consumer reads, else the seek is ignored by
// the fetcher, so seek after the first Poll when using WithTopics.
func (c *Consumer) Seek(ctx context.Context, topic string, partition int32, pos Position) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.replayOnly() {
		return ErrNoSubscription
	}
	if c.group != "" {
		c.mu.Lock()
		ok := c.assigned[topic][partition]
		c.mu.Unlock()
		if !ok {
			return fmt.Errorf("%w: %s[%d]", ErrNotAssigned, topic, partition)
		}
	}
	off, err := resolve(ctx, c.adm, topic, pos)
	if err != nil {
		return err
	}
	o, ok := off[partition]
	if !ok {
		return fmt.Errorf("%w: %s[%d]", ErrTopicNotFound, topic, partition)
	}
	c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: o}}})
	return nil
}

// Client is the underlying franz-go client. The caller must not close it.
func (c *Consumer) Client() *kgo.Client { return c.cl }

// Close leaves the group (committing polled records first when auto-commit
// is on) and closes the connections. It is idempotent; a Poll blocked in
// another goroutine returns ErrClosed.
func (c *Consumer) Close() {
	if c.closed.Swap(true) {
		return
	}
	c.cl.Close()
}
