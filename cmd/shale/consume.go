package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeOptions are the parsed flags of `shale consume`.
type consumeOptions struct {
	g          *cliGlobals
	topic      string
	from       offsetSpec
	until      *offsetSpec // nil: no end
	count      int64       // 0: no limit
	partitions []int32
	format     recordFormatter
	group      string
}

func newConsumeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consume TOPIC [-o start|end|N|-N|@TIME] [--until end|N|@TIME] [-n COUNT] [-p 0,1,...] [-f FORMAT] [--group G]",
		Short: "print records",
		Long: `Print records of a topic, from --offset (default start, or the group's committed
offset) until --until, -n records, or an interrupt.

FORMAT is kcat-style text with the verbs %t topic, %p partition, %o offset,
%e leader epoch, %k key, %K key length, %v value, %V value length, %T timestamp
(ms), %d timestamp (RFC 3339), %h headers k=v,..., %H header count, %% (default
'%v\n'), or a Go template such as '{{.Key}}={{.Value}}\n'. --output json prints
one JSON object per record.`,
		Example: `  shale consume quickstart --until end --format '%k %v %o %p %t %h\n'
  shale consume events -o -10 -p 0
  shale consume events --group billing -n 100`,
		Args: exactArgs(1, "name one topic"),
	}
	raw := consumeFlags{}
	o := &consumeOptions{g: addGlobals(cmd)}
	f := cmd.Flags()
	f.StringVarP(&raw.from, "offset", "o", "start", "where to start: start, end, N, -N (N before the end) or @TIME (ms or RFC 3339); without a committed offset with --group")
	f.StringVar(&raw.until, "until", "", "stop at: end (the end when the command started), offset N (exclusive) or @TIME")
	f.Int64VarP(&o.count, "count", "n", 0, "stop after this many records")
	f.StringVarP(&raw.partitions, "partition", "p", "", "only these partitions, comma-separated (not with --group)")
	f.StringVarP(&raw.format, "format", "f", defaultFormat, "text output format (ignored with --output json)")
	f.StringVarP(&o.group, "group", "g", "", "consume as a member of this group and commit what is printed")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		o.topic = args[0]
		if err := raw.parse(o); err != nil {
			return err
		}
		err := consumeMain(cmd.Context(), *o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: what was printed stands
		}
		return err
	}
	return cmd
}

// consumeFlags are the flags of `shale consume` as given.
type consumeFlags struct{ from, until, partitions, format string }

// parse checks the flags and fills o.
func (raw consumeFlags) parse(o *consumeOptions) error {
	var err error
	if o.count < 0 {
		return usagef("-n must not be negative")
	}
	if o.from, err = parseOffsetSpec(raw.from); err != nil {
		return err
	}
	if raw.until != "" {
		u, err := parseOffsetSpec(raw.until)
		if err != nil {
			return err
		}
		if u.kind == offsetStart || u.kind == offsetFromEnd {
			return usagef("--until takes end, N or @TIME")
		}
		o.until = &u
	}
	if o.partitions, err = parsePartitions(raw.partitions); err != nil {
		return err
	}
	if o.group != "" && len(o.partitions) > 0 {
		return usagef("--partition and --group exclude each other")
	}
	if o.format, err = newFormatter(raw.format); err != nil {
		return err
	}
	return nil
}

func consumeMain(ctx context.Context, o consumeOptions, stdout, stderr io.Writer) error {
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond)}
	if o.group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(o.topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(o.from.kgoOffset()))
	}
	c := &consumer{o: o, stdout: bufio.NewWriterSize(stdout, 64<<10), assigned: map[int32]bool{}}
	if o.group != "" {
		opts = append(opts, kgo.OnPartitionsAssigned(c.onAssigned), kgo.OnPartitionsRevoked(c.onRevoked),
			kgo.OnPartitionsLost(c.onRevoked))
	}
	cl, err := o.g.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	c.cl = cl
	if err := c.plan(ctx); err != nil {
		return err
	}
	if c.end != nil {
		c.bar = newProgress(stderr, "records", c.total())
	}
	err = c.loop(ctx)
	c.bar.finish(c.progressDone())
	if ferr := c.stdout.Flush(); err == nil {
		err = ferr
	}
	if o.group != "" {
		// Leave the group at once rather than after the session timeout.
		lctx, cancel := context.WithTimeout(context.Background(), o.g.timeout)
		defer cancel()
		cl.LeaveGroupContext(lctx)
	}
	return err
}

// kgoOffset is the spec as franz-go's reset offset (for group members
// without a committed offset).
func (s offsetSpec) kgoOffset() kgo.Offset {
	switch s.kind {
	case offsetEnd:
		return kgo.NewOffset().AtEnd()
	case offsetExact:
		return kgo.NewOffset().At(s.n)
	case offsetFromEnd:
		return kgo.NewOffset().AtEnd().Relative(-s.n)
	case offsetTime:
		return kgo.NewOffset().AfterMilli(s.n)
	default:
		return kgo.NewOffset().AtStart()
	}
}

// consumer runs one `shale consume`. The loop goroutine owns every field
// except assigned, which franz-go's group callbacks also touch under mu.
type consumer struct {
	o      consumeOptions
	cl     *kgo.Client
	stdout *bufio.Writer
	bar    *progress

	start   map[int32]int64 // where each partition began (progress)
	pos     map[int32]int64 // the next offset to print per partition
	end     map[int32]int64 // --until: exclusive end per partition, nil without --until
	printed int64

	mu       sync.Mutex
	assigned map[int32]bool // group mode: this member's partitions
}

func (c *consumer) onAssigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range m[c.o.topic] {
		c.assigned[p] = true
	}
}

func (c *consumer) onRevoked(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	for _, p := range m[c.o.topic] {
		delete(c.assigned, p)
	}
	c.mu.Unlock()
}

// plan resolves start and --until offsets and, outside group mode, assigns
// the partitions.
func (c *consumer) plan(ctx context.Context) error {
	adm := kadm.NewClient(c.cl)
	adm.SetTimeoutMillis(int32(c.o.g.timeout.Milliseconds()))
	pctx, cancel := context.WithTimeout(ctx, c.o.g.timeout)
	defer cancel()
	bounds, err := listBounds(pctx, adm, c.o.topic, c.o.partitions)
	if err != nil {
		return err
	}
	if c.start, err = c.o.from.resolve(pctx, adm, c.o.topic, bounds); err != nil {
		return err
	}
	if c.o.group != "" {
		committed, err := adm.FetchOffsetsForTopics(pctx, c.o.group, c.o.topic)
		if err != nil {
			return fmt.Errorf("group %s committed offsets: %w", c.o.group, err)
		}
		for p := range c.start {
			if r, ok := committed.Lookup(c.o.topic, p); ok && r.Err == nil && r.At >= 0 {
				c.start[p] = r.At
			}
		}
	}
	c.pos = map[int32]int64{}
	for p, o := range c.start {
		c.pos[p] = o
	}
	if c.o.until != nil {
		if c.end, err = c.o.until.resolve(pctx, adm, c.o.topic, bounds); err != nil {
			return err
		}
		if c.o.until.kind == offsetExact {
			for p := range c.end {
				c.end[p] = c.o.until.n // an exact end is not clamped to today's end
			}
		}
	}
	if c.o.group == "" {
		assign := map[int32]kgo.Offset{}
		for p, o := range c.start {
			assign[p] = kgo.NewOffset().At(o)
		}
		c.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{c.o.topic: assign})
	}
	return nil
}

// total is the number of offsets to cover with --until, else 0.
func (c *consumer) total() int64 {
	var t int64
	for p, e := range c.end {
		t += max(e-c.start[p], 0)
	}
	return t
}

func (c *consumer) progressDone() int64 {
	var d int64
	for p, e := range c.end {
		d += max(min(c.pos[p], e)-c.start[p], 0)
	}
	return d
}

// finished reports whether -n or --until is reached.
func (c *consumer) finished() bool {
	if c.o.count > 0 && c.printed >= c.o.count {
		return true
	}
	if c.end == nil {
		return false
	}
	parts := c.start
	if c.o.group != "" {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.assigned) == 0 {
			return false
		}
		parts = map[int32]int64{}
		for p := range c.assigned {
			parts[p] = 0
		}
	}
	for p := range parts {
		if c.pos[p] < c.end[p] {
			return false
		}
	}
	return true
}

// loop polls, prints and (in group mode) commits until finished, an error,
// or ctx is done.
func (c *consumer) loop(ctx context.Context) error {
	var buf bytes.Buffer
	for !c.finished() {
		limit := 10000
		if c.o.count > 0 {
			limit = int(min(int64(limit), c.o.count-c.printed))
		}
		fetches := c.cl.PollRecords(ctx, limit)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) {
				return fe.Err
			}
			return fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var printed []*kgo.Record
		for _, r := range fetches.Records() {
			if c.end != nil && r.Offset >= c.end[r.Partition] {
				continue
			}
			if c.o.count > 0 && c.printed >= c.o.count {
				break
			}
			buf.Reset()
			var err error
			if c.o.g.json() {
				err = appendJSONRecord(&buf, r)
			} else {
				err = c.o.format(&buf, r)
			}
			if err != nil {
				return fmt.Errorf("formatting %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			if _, err := c.stdout.Write(buf.Bytes()); err != nil {
				return err
			}
			c.printed++
			c.pos[r.Partition] = r.Offset + 1
			printed = append(printed, r)
		}
		if err := c.stdout.Flush(); err != nil {
			return err
		}
		if c.o.group != "" && len(printed) > 0 {
			if err := c.cl.CommitRecords(ctx, printed...); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		c.bar.update(c.progressDone())
	}
	return nil
}
