package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/sdk"
)

// topicDescription is `shale topic describe`'s output.
type topicDescription struct {
	Topic             string             `json:"topic"`
	ID                string             `json:"id"`
	Internal          bool               `json:"internal"`
	ReplicationFactor int                `json:"replication_factor"`
	Configs           []topicConfig      `json:"configs"`
	Partitions        []topicPartitionDs `json:"partitions"`
}

type topicConfig struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

type topicPartitionDs struct {
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	LogStartOffset int64   `json:"log_start_offset"`
	HighWatermark  int64   `json:"high_watermark"`
	Error          string  `json:"error,omitempty"`
}

func newTopicDescribeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe TOPIC [--all-configs]",
		Short: "a topic's configs and partitions: leader, epoch, replicas, ISR, log start, high watermark",
		Args:  exactArgs(1, "name one topic"),
	}
	g := addGlobals(cmd)
	cmd.ValidArgsFunction = onlyFirst(completeTopics(g))
	all := cmd.Flags().Bool("all-configs", false, "list every config with its source, not only those set on the topic or broker")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return topicDescribe(cmd.Context(), g, cmd.OutOrStdout(), args[0], *all)
	}
	return cmd
}

func topicDescribe(ctx context.Context, g *cliGlobals, stdout io.Writer, topic string, all bool) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	info, err := a.DescribeTopic(ctx, topic)
	if err == nil && len(info.Partitions) == 0 {
		err = sdk.ErrTopicNotFound
	}
	if err != nil {
		return topicNotFound(topic, err)
	}
	desc := topicDescription{Topic: topic, ID: info.ID, Internal: info.Internal,
		ReplicationFactor: info.ReplicationFactor(), Configs: []topicConfig{}}
	// The SDK's TopicConfig has no sources: the franz-go admin client
	// underneath has them.
	rcs, err := a.Kadm().DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return err
	}
	if rc.Err != nil {
		return fmt.Errorf("configs: %s", errText(rc.Err, rc.ErrMessage))
	}
	for _, c := range rc.Configs {
		if !all && c.Source == kmsg.ConfigSourceDefaultConfig {
			continue
		}
		desc.Configs = append(desc.Configs, topicConfig{Name: c.Key, Value: c.MaybeValue(), Source: c.Source.String(), Sensitive: c.Sensitive})
	}
	sort.Slice(desc.Configs, func(i, j int) bool { return desc.Configs[i].Name < desc.Configs[j].Name })
	bounds, err := a.PartitionOffsets(ctx, topic)
	if err != nil {
		return topicNotFound(topic, err)
	}
	for _, p := range info.Partitions {
		pd := topicPartitionDs{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: p.Replicas, ISR: p.ISR, LogStartOffset: bounds[p.Partition].Start, HighWatermark: bounds[p.Partition].End}
		if p.Err != nil {
			pd.Error = p.Err.Error()
		}
		desc.Partitions = append(desc.Partitions, pd)
	}
	if g.json() {
		return writeJSON(stdout, desc)
	}
	return printTopicDescription(stdout, desc)
}

func printTopicDescription(w io.Writer, d topicDescription) error {
	t := newTable(w, "TOPIC", d.Topic)
	t.row("ID", d.ID)
	t.row("PARTITIONS", len(d.Partitions))
	t.row("REPLICATION-FACTOR", d.ReplicationFactor)
	t.row("INTERNAL", d.Internal)
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCONFIGS")
	t = newTable(w, "NAME", "VALUE", "SOURCE")
	for _, c := range d.Configs {
		v := c.Value
		if c.Sensitive {
			v = "(sensitive)"
		}
		t.row(c.Name, v, c.Source)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nPARTITIONS")
	t = newTable(w, "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "LOG-START", "HIGH-WATERMARK", "ERROR")
	for _, p := range d.Partitions {
		t.row(p.Partition, p.Leader, p.LeaderEpoch, int32List(p.Replicas), int32List(p.ISR), p.LogStartOffset, p.HighWatermark, p.Error)
	}
	return t.flush()
}

// alterResult is `shale topic alter-config`'s output.
type alterResult struct {
	Topic  string            `json:"topic"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
	DryRun bool              `json:"dry_run,omitempty"`
}

func newTopicAlterConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "alter-config TOPIC [--set name=value]... [--delete name]... [--dry-run]",
		Short:   "set topic configs, or return them to their defaults",
		Example: "  shale topic alter-config orders --set retention.ms=7200000 --delete cleanup.policy",
		Args:    exactArgs(1, "name one topic"),
	}
	g := addGlobals(cmd)
	cmd.ValidArgsFunction = onlyFirst(completeTopics(g))
	sets := cmd.Flags().StringArrayP("set", "s", nil, "set a config: name=value (repeatable)")
	dels := cmd.Flags().StringArrayP("delete", "d", nil, "remove a config from the topic, back to its default (repeatable)")
	dryRun := cmd.Flags().Bool("dry-run", false, "have the broker validate the change without applying it")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(*sets)+len(*dels) == 0 {
			return usagef("nothing to change: give --set or --delete")
		}
		return topicAlterConfig(cmd.Context(), g, cmd.OutOrStdout(), args[0], *sets, *dels, *dryRun)
	}
	return cmd
}

func topicAlterConfig(ctx context.Context, g *cliGlobals, stdout io.Writer, topic string, sets, dels []string, dryRun bool) error {
	res := alterResult{Topic: topic, Set: map[string]string{}, Delete: dels, DryRun: dryRun}
	var alters []kadm.AlterConfig
	for _, s := range sets {
		k, v, err := splitKV(s)
		if err != nil {
			return err
		}
		res.Set[k] = v
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range dels {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	adm := a.Kadm()
	alter := adm.AlterTopicConfigs
	if dryRun {
		alter = adm.ValidateAlterTopicConfigs
	}
	resp, err := alter(ctx, alters, res.Topic)
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("%s: %s", r.Name, errText(r.Err, r.ErrMessage))
		}
	}
	if g.json() {
		return writeJSON(stdout, res)
	}
	verb := "altered"
	if dryRun {
		verb = "validated (dry run, nothing changed)"
	}
	fmt.Fprintf(stdout, "%s: %s\n", res.Topic, verb)
	t := newTable(stdout, "NAME", "NEW-VALUE")
	keys := make([]string, 0, len(res.Set))
	for k := range res.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.row(k, res.Set[k])
	}
	for _, k := range dels {
		t.row(k, "(default)")
	}
	return t.flush()
}
