package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// errUnknownTopic is returned when a named topic does not exist.
var errUnknownTopic = errors.New("unknown topic")

const topicUsage = `shale topic create TOPIC... [-p N] [-r N] [-c name=value]...
       shale topic list [--internal]
       shale topic describe TOPIC [--all-configs]
       shale topic alter-config TOPIC [--set name=value]... [--delete name]... [--dry-run]
       shale topic delete TOPIC...
  common flags: [--bootstrap HOST:PORT] [--output text|json] [--timeout D]`

// topicCmd is `shale topic VERB ...`.
func topicCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: %s\n", topicUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "create":
		err = topicCreate(args[1:], stdout, stderr)
	case "list", "ls":
		err = topicList(args[1:], stdout, stderr)
	case "describe":
		err = topicDescribe(args[1:], stdout, stderr)
	case "alter-config":
		err = topicAlterConfig(args[1:], stdout, stderr)
	case "delete":
		err = topicDelete(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, "usage: %s\n", topicUsage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown verb %q", errUsage, args[0])
	}
	return exitCode(stderr, "shale topic", topicUsage, err)
}

// topicResult is one topic's outcome of create or delete.
type topicResult struct {
	Topic string `json:"topic"`
	Error string `json:"error,omitempty"`
}

// printTopicResults prints results and returns an error if any topic failed.
func printTopicResults(g *cliGlobals, stdout io.Writer, results []topicResult, okWord string) error {
	sort.Slice(results, func(i, j int) bool { return results[i].Topic < results[j].Topic })
	failed := 0
	for _, r := range results {
		if r.Error != "" {
			failed++
		}
	}
	if g.json() {
		if err := writeJSON(stdout, results); err != nil {
			return err
		}
	} else {
		t := newTable(stdout, "TOPIC", "STATUS")
		for _, r := range results {
			status := okWord
			if r.Error != "" {
				status = r.Error
			}
			t.row(r.Topic, status)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d topics failed", failed, len(results))
	}
	return nil
}

func topicCreate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("shale topic create", "shale topic create TOPIC... [-p N] [-r N] [-c name=value]...", stderr)
	g := addGlobals(fs)
	partitions := fs.Int("p", -1, "partitions (-1: the broker's num.partitions)")
	fs.IntVar(partitions, "partitions", -1, "same as -p")
	replicas := fs.Int("r", -1, "replication factor (-1: the broker's default.replication.factor)")
	fs.IntVar(replicas, "replicas", -1, "same as -r")
	var configs listFlag
	fs.Var(&configs, "c", "topic config name=value (repeatable)")
	fs.Var(&configs, "config", "same as -c")
	topics, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := g.validate(); err != nil {
		return err
	}
	if len(topics) == 0 {
		return fmt.Errorf("%w: no topic named", errUsage)
	}
	cfg := map[string]*string{}
	for _, c := range configs {
		k, v, err := splitKV(c)
		if err != nil {
			return err
		}
		cfg[k] = &v
	}
	adm, ctx, done, err := g.adminSession()
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.CreateTopics(ctx, int32(*partitions), int16(*replicas), cfg, topics...)
	if err != nil {
		return err
	}
	var results []topicResult
	for _, r := range resp {
		res := topicResult{Topic: r.Topic}
		if r.Err != nil {
			res.Error = errText(r.Err, r.ErrMessage)
		}
		results = append(results, res)
	}
	return printTopicResults(g, stdout, results, "created")
}

func topicDelete(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("shale topic delete", "shale topic delete TOPIC...", stderr)
	g := addGlobals(fs)
	topics, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := g.validate(); err != nil {
		return err
	}
	if len(topics) == 0 {
		return fmt.Errorf("%w: no topic named", errUsage)
	}
	adm, ctx, done, err := g.adminSession()
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.DeleteTopics(ctx, topics...)
	if err != nil {
		return err
	}
	var results []topicResult
	for _, r := range resp {
		res := topicResult{Topic: r.Topic}
		if r.Err != nil {
			res.Error = errText(r.Err, r.ErrMessage)
		}
		results = append(results, res)
	}
	return printTopicResults(g, stdout, results, "deleted")
}

// topicListEntry is one row of `shale topic list`.
type topicListEntry struct {
	Topic             string `json:"topic"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
}

func topicList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("shale topic list", "shale topic list [--internal]", stderr)
	g := addGlobals(fs)
	internal := fs.Bool("internal", false, "also list internal topics such as __consumer_offsets")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := g.validate(); err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected %q", errUsage, rest[0])
	}
	adm, ctx, done, err := g.adminSession()
	if err != nil {
		return err
	}
	defer done()
	list := adm.ListTopics
	if *internal {
		list = adm.ListTopicsWithInternal
	}
	details, err := list(ctx)
	if err != nil {
		return err
	}
	entries := []topicListEntry{}
	for _, d := range details.Sorted() {
		if d.Err != nil {
			continue
		}
		entries = append(entries, topicListEntry{Topic: d.Topic, Partitions: len(d.Partitions),
			ReplicationFactor: d.Partitions.NumReplicas(), Internal: d.IsInternal})
	}
	if g.json() {
		return writeJSON(stdout, entries)
	}
	t := newTable(stdout, "TOPIC", "PARTITIONS", "REPLICAS")
	for _, e := range entries {
		t.row(e.Topic, e.Partitions, e.ReplicationFactor)
	}
	return t.flush()
}

// errText is a Kafka error with the broker's message, if it sent one.
func errText(err error, msg string) string {
	if msg != "" {
		return fmt.Sprintf("%v: %s", err, msg)
	}
	return err.Error()
}

// topicDetail fetches one topic's metadata or errUnknownTopic.
func topicDetail(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	details, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	d, ok := details[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		if ok && d.Err != nil {
			return d, fmt.Errorf("%w %q: %v", errUnknownTopic, topic, d.Err)
		}
		return d, fmt.Errorf("%w %q", errUnknownTopic, topic)
	}
	return d, nil
}
