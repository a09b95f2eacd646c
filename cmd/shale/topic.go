package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
)

func newTopicCmd() *cobra.Command {
	return newGroup("topic", "create, list, describe, alter and delete topics",
		newTopicCreateCmd(), newTopicListCmd(), newTopicDescribeCmd(), newTopicAlterConfigCmd(), newTopicDeleteCmd(), newTopicRestoreCmd(),
		newTopicForkCmd())
}

// topicResult is one topic's outcome of create or delete.
type topicResult struct {
	Topic string `json:"topic"`
	Error string `json:"error,omitempty"`
}

// topicResultOf is the result of a topic's creation or deletion, its
// error worded by errText.
func topicResultOf(topic string, err error, msg string) topicResult {
	res := topicResult{Topic: topic}
	if err != nil {
		res.Error = errText(err, msg)
	}
	return res
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

func newTopicCreateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "create TOPIC... [-p N] [-r N] [-c name=value]...",
		Short:   "create topics",
		Example: "  shale topic create orders -p 3 -r 3 -c retention.ms=86400000",
		Args:    minArgs(1, "no topic named"),
	}
	g := addGlobals(cmd)
	partitions := cmd.Flags().Int32P("partitions", "p", -1, "partitions (-1: the broker's num.partitions)")
	replicas := cmd.Flags().Int16P("replicas", "r", -1, "replication factor (-1: the broker's default.replication.factor)")
	configs := cmd.Flags().StringArrayP("config", "c", nil, "topic config name=value (repeatable)")
	cmd.RunE = func(cmd *cobra.Command, topics []string) error {
		return topicCreate(cmd.Context(), g, cmd.OutOrStdout(), topics, *partitions, *replicas, *configs)
	}
	return cmd
}

func topicCreate(ctx context.Context, g *cliGlobals, stdout io.Writer, topics []string, partitions int32, replicas int16, configs []string) error {
	cfg := map[string]*string{}
	for _, c := range configs {
		k, v, err := splitKV(c)
		if err != nil {
			return err
		}
		cfg[k] = &v
	}
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	adm := a.Kadm()
	resp, err := adm.CreateTopics(ctx, partitions, replicas, cfg, topics...)
	if err != nil {
		return err
	}
	var results []topicResult
	for _, r := range resp {
		results = append(results, topicResultOf(r.Topic, r.Err, r.ErrMessage))
	}
	return printTopicResults(g, stdout, results, "created")
}

func newTopicDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete TOPIC...",
		Short: "delete topics (their remote segments follow)",
		Args:  minArgs(1, "no topic named"),
	}
	g := addGlobals(cmd)
	cmd.ValidArgsFunction = completeTopics(g)
	cmd.RunE = func(cmd *cobra.Command, topics []string) error {
		return topicDelete(cmd.Context(), g, cmd.OutOrStdout(), topics)
	}
	return cmd
}

func topicDelete(ctx context.Context, g *cliGlobals, stdout io.Writer, topics []string) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	adm := a.Kadm()
	resp, err := adm.DeleteTopics(ctx, topics...)
	if err != nil {
		return err
	}
	var results []topicResult
	for _, r := range resp {
		results = append(results, topicResultOf(r.Topic, r.Err, r.ErrMessage))
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

func newTopicListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list [--internal]",
		Aliases: []string{"ls"},
		Short:   "list topics",
		Args:    noArgs,
	}
	g := addGlobals(cmd)
	internal := cmd.Flags().Bool("internal", false, "also list internal topics such as __consumer_offsets")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return topicList(cmd.Context(), g, cmd.OutOrStdout(), *internal)
	}
	return cmd
}

func topicList(ctx context.Context, g *cliGlobals, stdout io.Writer, internal bool) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	adm := a.Kadm()
	list := adm.ListTopics
	if internal {
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
