package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/sdk"
)

// consumeOptions are the parsed flags of `shale consume`.
type consumeOptions struct {
	g          *cliGlobals
	topic      string
	from       sdk.Position
	until      *sdk.Position // nil: no end
	count      int64         // 0: no limit
	partitions []int32
	format     recordFormatter
	group      string
}

func newConsumeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consume TOPIC [-o start|end|N|-N|@TIME] [--until end|N|@TIME] [-n COUNT] [-p 0,1,...] [-f FORMAT] [--group G]",
		Short: "print records",
		Long: `Print records of a topic, from --offset (default start, or the group's committed
offset) until --until, -n records, or an interrupt. --until end stops at each
partition's high watermark when the command started, counting transaction
markers, which are never printed. Records are read as read_uncommitted (as
kafka-console-consumer reads them): records of aborted transactions print.

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
	cmd.ValidArgsFunction = onlyFirst(completeTopics(o.g))
	f := cmd.Flags()
	f.StringVarP(&raw.from, "offset", "o", "start", "where to start: start, end, N (past the end: the end), -N (N before the end) or @TIME (ms or RFC 3339); with --group where nothing is committed")
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
	if o.from, err = parsePosition(raw.from); err != nil {
		return err
	}
	if raw.until != "" {
		u, err := parsePosition(raw.until)
		if err != nil {
			return err
		}
		if u.Kind() == sdk.PositionStart || u.Kind() == sdk.PositionFromEnd {
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
	c := &consumer{o: o, stdout: bufio.NewWriterSize(stdout, 64<<10)}
	if err := c.plan(ctx); err != nil {
		return topicNotFound(o.topic, err)
	}
	// Control records (transaction markers) come back so that the fetch
	// position passes them: a partition that ends in a marker ends past its
	// last record, and --until end is judged by the position, not by the
	// last record printed. They are never printed.
	extra := []sdk.Option{sdk.WithKgoOptions(kgo.FetchMaxWait(500*time.Millisecond), kgo.KeepControlRecords())}
	if o.group != "" {
		// Commits are the loop's, of what it printed.
		extra = append(extra, sdk.WithGroup(o.group, o.topic), sdk.WithAutoCommit(false), sdk.WithStartAt(o.from))
	} else {
		assign := map[int32]sdk.Position{}
		for p, off := range c.start {
			assign[p] = sdk.AtOffset(off)
		}
		extra = append(extra, sdk.WithAssignment(map[string]map[int32]sdk.Position{o.topic: assign}))
	}
	opts, err := o.g.sdkOptions(extra...)
	if err != nil {
		return err
	}
	if c.cons, err = sdk.NewConsumer(opts...); err != nil {
		return err
	}
	// Close leaves the group at once rather than after the session timeout.
	defer c.cons.Close()
	if c.end != nil {
		c.bar = newProgress(stderr, "records", c.total())
	}
	err = c.loop(ctx)
	c.bar.finish(c.progressDone())
	if ferr := c.stdout.Flush(); err == nil {
		err = ferr
	}
	return err
}

// consumer runs one `shale consume`; the loop goroutine owns it.
type consumer struct {
	o      consumeOptions
	cons   *sdk.Consumer
	stdout *bufio.Writer
	bar    *progress

	start   map[int32]int64 // where each partition began (progress)
	pos     map[int32]int64 // the fetch position per partition: past every record and marker seen
	end     map[int32]int64 // --until: exclusive end per partition, nil without --until
	printed int64
}

// plan resolves where each partition starts (the group's committed offset
// in group mode, where there is one) and the --until offsets, through the
// SDK.
func (c *consumer) plan(ctx context.Context) error {
	a, pctx, done, err := c.o.g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	if c.start, err = a.ResolveOffsets(pctx, c.o.topic, c.o.from, c.o.partitions...); err != nil {
		return err
	}
	if c.o.group != "" {
		committed, err := a.CommittedOffsets(pctx, c.o.group)
		if err != nil {
			return fmt.Errorf("group %s committed offsets: %w", c.o.group, err)
		}
		for p := range c.start {
			if off, ok := committed[c.o.topic][p]; ok && off >= 0 {
				c.start[p] = off
			}
		}
	}
	c.pos = maps.Clone(c.start)
	if c.o.until != nil {
		if c.o.until.Kind() == sdk.PositionOffset {
			c.end = map[int32]int64{}
			for p := range c.start {
				c.end[p] = c.o.until.Offset() // an exact end is not clamped to today's end
			}
		} else if c.end, err = a.ResolveOffsets(pctx, c.o.topic, *c.o.until, c.o.partitions...); err != nil {
			return err
		}
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

// finished reports whether -n or --until is reached: in group mode on the
// partitions assigned to this member.
func (c *consumer) finished() bool {
	if c.o.count > 0 && c.printed >= c.o.count {
		return true
	}
	if c.end == nil {
		return false
	}
	parts := slices.Collect(maps.Keys(c.start))
	if c.o.group != "" {
		if parts = c.cons.Assigned()[c.o.topic]; len(parts) == 0 {
			return false
		}
	}
	for _, p := range parts {
		if c.pos[p] < c.end[p] {
			return false
		}
	}
	return true
}

// loop polls, prints and (in group mode) commits until finished, an error,
// or ctx is done. A partition is finished when its fetch position reaches
// its end: the position passes transaction markers (control records),
// which is how a partition ending in a COMMIT or ABORT marker, whose end
// is one past the marker, is ever finished. The consumer reads
// read_uncommitted (as kafka-console-consumer), so aborted records print
// and every offset below the high watermark comes back as a record or a
// marker.
func (c *consumer) loop(ctx context.Context) error {
	var buf bytes.Buffer
	for !c.finished() {
		records, err := c.cons.Poll(ctx)
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		var consumed []*sdk.Record
		for _, r := range records {
			if c.end != nil && r.Offset >= c.end[r.Partition] {
				continue
			}
			if c.o.count > 0 && c.printed >= c.o.count {
				break
			}
			if r.Attrs.IsControl() {
				c.pos[r.Partition] = r.Offset + 1
				consumed = append(consumed, r) // a group commits past it
				continue
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
			consumed = append(consumed, r)
		}
		if err := c.stdout.Flush(); err != nil {
			return err
		}
		if c.o.group != "" && len(consumed) > 0 {
			if err := c.cons.Commit(ctx, consumed...); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		c.bar.update(c.progressDone())
	}
	return nil
}
