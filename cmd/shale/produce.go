package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/sdk"
)

// produceSummary is what `shale produce` reports when its input is done.
type produceSummary struct {
	Topic      string             `json:"topic"`
	Records    int64              `json:"records"`
	Bytes      int64              `json:"bytes"`
	Partitions []producePartition `json:"partitions"`
}

// producePartition is the offset range written to one partition; with
// acks=0 the offsets are unknown and -1.
type producePartition struct {
	Partition   int32 `json:"partition"`
	Records     int64 `json:"records"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
}

// produceOptions are the parsed flags of `shale produce`.
type produceOptions struct {
	g            *cliGlobals
	topic        string
	files        []string
	keySep       string
	headers      []sdk.Header
	partition    int
	compression  string
	acks         string
	maxLineBytes int
}

func newProduceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "produce TOPIC [FILE...] [-K SEP] [-H k=v]... [-p N] [-z none|gzip|snappy|lz4|zstd] [--acks all|1|0]",
		Short: "produce one record per line of stdin or of each FILE",
		Long: `Produce one record per line of stdin (or of each FILE, in order). With -K the
text before the first SEP of a line is the key. A topic the broker may
auto-create is created on first use.`,
		Example: `  printf 'k1=hello\nk2=world\n' | shale produce quickstart --key-separator = --header app=demo
  shale produce events events.txt -p 0 -z zstd`,
		Args: minArgs(1, "no topic named"),
	}
	o := produceOptions{g: addGlobals(cmd)}
	cmd.ValidArgsFunction = onlyFirst(completeTopics(o.g))
	f := cmd.Flags()
	f.StringVarP(&o.keySep, "key-separator", "K", "", "split each line into key SEP value at the first SEP")
	headers := f.StringArrayP("header", "H", nil, "a header k=v on every record (repeatable)")
	f.IntVarP(&o.partition, "partition", "p", -1, "write every record to this partition (-1: by key, murmur2 as the Java client)")
	f.StringVarP(&o.compression, "compression", "z", "none", "none, gzip, snappy, lz4 or zstd")
	f.StringVar(&o.acks, "acks", "all", "all (idempotent), 1 or 0")
	f.IntVar(&o.maxLineBytes, "max-line-bytes", 1<<20, "longest line accepted")
	cmd.RegisterFlagCompletionFunc("compression", cobra.FixedCompletions([]string{"none", "gzip", "snappy", "lz4", "zstd"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("acks", cobra.FixedCompletions([]string{"all", "1", "0"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		o.topic, o.files = args[0], args[1:]
		for _, h := range *headers {
			k, v, err := splitKV(h)
			if err != nil {
				return err
			}
			o.headers = append(o.headers, sdk.Header{Key: k, Value: []byte(v)})
		}
		return produceMain(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
	return cmd
}

func produceMain(ctx context.Context, o produceOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	extra, err := o.producerOpts()
	if err != nil {
		return err
	}
	opts, err := o.g.sdkOptions(extra...)
	if err != nil {
		return err
	}
	p, err := sdk.NewProducer(opts...)
	if err != nil {
		return err
	}
	sum, err := produceAll(ctx, p, o, stdin, stderr)
	closeCtx, cancel := context.WithTimeout(context.Background(), o.g.timeout)
	defer cancel()
	if cerr := p.Close(closeCtx); cerr != nil && err == nil {
		err = cerr
	}
	if sum != nil {
		if o.g.json() {
			if werr := writeJSON(stdout, sum); werr != nil && err == nil {
				err = werr
			}
		} else {
			printProduceSummary(stdout, sum)
		}
	}
	return err
}

// producerOpts maps the flags to SDK producer options.
func (o produceOptions) producerOpts() ([]sdk.Option, error) {
	var opts []sdk.Option
	switch o.acks {
	case "all", "-1":
		opts = append(opts, sdk.WithAcks(sdk.AcksAll))
	case "1":
		opts = append(opts, sdk.WithAcks(sdk.AcksLeader), sdk.WithIdempotence(false))
	case "0":
		opts = append(opts, sdk.WithAcks(sdk.AcksNone), sdk.WithIdempotence(false))
	default:
		return nil, usagef("--acks must be all, 1 or 0")
	}
	switch c := sdk.Compression(o.compression); c {
	case sdk.CompressionNone, sdk.CompressionGzip, sdk.CompressionSnappy, sdk.CompressionLZ4, sdk.CompressionZstd:
		opts = append(opts, sdk.WithCompression(c))
	case "":
	default:
		return nil, usagef("unknown --compression %q", o.compression)
	}
	// Send each line as soon as the client can (as kcat does); like kcat
	// and the Java producer, a topic the broker may auto-create
	// (auto.create.topics.enable) is created on first use.
	opts = append(opts, sdk.WithLinger(0), sdk.WithDeliveryTimeout(o.g.timeout), sdk.WithKgoOptions(kgo.AllowAutoTopicCreation()))
	if o.partition >= 0 {
		opts = append(opts, sdk.WithKgoOptions(kgo.RecordPartitioner(kgo.ManualPartitioner())))
	}
	return opts, nil
}

// produceAll sends every line of the inputs and waits for all of them. It
// returns the summary of what was acknowledged (nil if nothing was sent) and
// the first error: a failed record stops reading further input.
func produceAll(ctx context.Context, p *sdk.Producer, o produceOptions, stdin io.Reader, stderr io.Writer) (*produceSummary, error) {
	var total int64
	unit := "records"
	if len(o.files) > 0 {
		unit = "bytes"
		for _, f := range o.files {
			st, err := os.Stat(f)
			if err != nil {
				return nil, err
			}
			total += st.Size()
		}
	}
	bar := newProgress(stderr, unit, total)
	acc := newProduceTally(o.topic, o.acks == "0")
	var sent, readBytes int64
	send := func(line []byte) {
		r := &sdk.Record{Topic: o.topic, Headers: o.headers}
		if o.partition >= 0 {
			r.Partition = int32(o.partition)
		}
		if o.keySep != "" {
			if k, v, ok := bytes.Cut(line, []byte(o.keySep)); ok {
				r.Key, line = k, v
			}
		}
		r.Value = line
		sent++
		p.Send(ctx, r, acc.done)
	}
	readOne := func(in io.Reader) error {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), o.maxLineBytes)
		for sc.Scan() {
			if acc.failed() || ctx.Err() != nil {
				return nil
			}
			line := bytes.Clone(sc.Bytes())
			readBytes += int64(len(line)) + 1
			send(line)
			if unit == "bytes" {
				bar.update(readBytes)
			} else {
				bar.update(sent)
			}
		}
		return sc.Err()
	}
	var readErr error
	if len(o.files) == 0 {
		readErr = readOne(stdin)
	}
	for _, name := range o.files {
		if readErr != nil {
			break
		}
		f, err := os.Open(name)
		if err != nil {
			readErr = err
			break
		}
		readErr = readOne(f)
		f.Close()
	}
	flushErr := p.Flush(ctx)
	if unit == "bytes" {
		bar.finish(readBytes)
	} else {
		bar.finish(sent)
	}
	sum := acc.summary()
	switch {
	case acc.err() != nil:
		return sum, fmt.Errorf("produce: %w", acc.err())
	case readErr != nil:
		return sum, fmt.Errorf("reading input: %w", readErr)
	case flushErr != nil:
		return sum, flushErr
	case ctx.Err() != nil:
		return sum, ctx.Err()
	}
	return sum, nil
}

// produceTally collects produce callbacks, which franz-go runs on its own
// goroutines; mu guards every field.
type produceTally struct {
	mu       sync.Mutex
	topic    string
	noAcks   bool // acks=0: the broker answers nothing, offsets are unknown
	records  int64
	bytes    int64
	parts    map[int32]*producePartition
	firstErr error
}

func newProduceTally(topic string, noAcks bool) *produceTally {
	return &produceTally{topic: topic, noAcks: noAcks, parts: map[int32]*producePartition{}}
}

func (t *produceTally) done(r *sdk.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.firstErr == nil {
			t.firstErr = err
		}
		return
	}
	t.records++
	t.bytes += int64(len(r.Key) + len(r.Value))
	p := t.parts[r.Partition]
	if p == nil {
		p = &producePartition{Partition: r.Partition, FirstOffset: r.Offset, LastOffset: r.Offset}
		t.parts[r.Partition] = p
	}
	p.Records++
	if t.noAcks {
		p.FirstOffset, p.LastOffset = -1, -1
		return
	}
	p.FirstOffset = min(p.FirstOffset, r.Offset)
	p.LastOffset = max(p.LastOffset, r.Offset)
}

func (t *produceTally) failed() bool { return t.err() != nil }

func (t *produceTally) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstErr
}

// summary returns a copy, partitions sorted.
func (t *produceTally) summary() *produceSummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &produceSummary{Topic: t.topic, Records: t.records, Bytes: t.bytes, Partitions: []producePartition{}}
	for _, p := range t.parts {
		s.Partitions = append(s.Partitions, *p)
	}
	sort.Slice(s.Partitions, func(i, j int) bool { return s.Partitions[i].Partition < s.Partitions[j].Partition })
	return s
}

func printProduceSummary(w io.Writer, s *produceSummary) {
	fmt.Fprintf(w, "produced %d %s (%d bytes) to %s\n", s.Records, plural(s.Records, "record"), s.Bytes, s.Topic)
	if len(s.Partitions) == 0 {
		return
	}
	t := newTable(w, "PARTITION", "RECORDS", "OFFSETS")
	for _, p := range s.Partitions {
		offsets := "- (acks=0)"
		if p.FirstOffset >= 0 {
			offsets = fmt.Sprintf("%d-%d", p.FirstOffset, p.LastOffset)
		}
		t.row(p.Partition, p.Records, offsets)
	}
	t.flush()
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return strings.TrimSuffix(word, "s") + "s"
}
