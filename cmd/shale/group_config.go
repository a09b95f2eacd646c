package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/sdk"
)

// groupConfigEntry is one row of `shale group config`.
type groupConfigEntry struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // group (the group's own) or default (the node's)
}

func newGroupConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config GROUP",
		Short: "a group's configs (KIP-848, KIP-932): show them, or --set and --delete some",
		Long: "Shows a consumer or share group's configs (consumer.session.timeout.ms, consumer.heartbeat.interval.ms,\n" +
			"share.session.timeout.ms, share.heartbeat.interval.ms, share.record.lock.duration.ms,\n" +
			"share.delivery.count.limit, share.auto.offset.reset, share.isolation.level), each the group's own or\n" +
			"the node's default. --set name=value and --delete name change them first (IncrementalAlterConfigs on\n" +
			"the GROUP resource); the group applies them at its next heartbeat. The group need not exist.",
		Args: exactArgs(1, "name a group"),
	}
	g := addGlobals(cmd)
	sets := cmd.Flags().StringArray("set", nil, "group config name=value to set (repeatable)")
	deletes := cmd.Flags().StringArray("delete", nil, "group config name to delete, back to the node's default (repeatable)")
	cmd.ValidArgsFunction = completeGroups(g)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return groupConfig(cmd.Context(), g, cmd.OutOrStdout(), args[0], *sets, *deletes)
	}
	return cmd
}

func groupConfig(ctx context.Context, g *cliGlobals, stdout io.Writer, group string, sets, deletes []string) error {
	var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, s := range sets {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return usagef("--set %q: want name=value", s)
		}
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = name, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
		ops = append(ops, c)
	}
	for _, name := range deletes {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = name, kmsg.IncrementalAlterConfigOpDelete
		ops = append(ops, c)
	}
	opts, err := g.sdkOptions()
	if err != nil {
		return err
	}
	// kadm has no group config calls: the requests go raw, over the
	// franz-go client of an SDK producer that never produces.
	p, err := sdk.NewProducer(opts...)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Close(cctx)
	}()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cl := p.Client()
	if len(ops) > 0 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeGroupConfig, group, ops
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Resources) != 1 {
			return fmt.Errorf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
		}
		if err := resourceErr(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage); err != nil {
			return fmt.Errorf("group %s: %w", group, err)
		}
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("DescribeConfigs answered %d resources", len(resp.Resources))
	}
	if err := resourceErr(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage); err != nil {
		return fmt.Errorf("group %s: %w", group, err)
	}
	entries := []groupConfigEntry{}
	for _, c := range resp.Resources[0].Configs {
		e := groupConfigEntry{Name: c.Name, Source: "default"}
		if c.Value != nil {
			e.Value = *c.Value
		}
		if c.Source == kmsg.ConfigSourceGroupConfig {
			e.Source = "group"
		}
		entries = append(entries, e)
	}
	if g.json() {
		return writeJSON(stdout, entries)
	}
	t := newTable(stdout, "NAME", "VALUE", "SOURCE")
	for _, e := range entries {
		t.row(e.Name, e.Value, e.Source)
	}
	return t.flush()
}

// resourceErr is a config resource's error code and message as an error
// (nil for none).
func resourceErr(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}
