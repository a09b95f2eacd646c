package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// resetPlan is `shale group reset-offsets`'s output: one row per partition.
type resetPlan struct {
	Group      string        `json:"group"`
	DryRun     bool          `json:"dry_run"`
	Partitions []resetOffset `json:"partitions"`
}

// resetOffset is one partition's move; OldOffset -1 means nothing was
// committed.
type resetOffset struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	OldOffset    int64  `json:"old_offset"`
	NewOffset    int64  `json:"new_offset"`
	LogEndOffset int64  `json:"log_end_offset"`
	Lag          int64  `json:"lag"`
}

func newGroupResetOffsetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic T [--partition 0,1] --to earliest|latest|N|-N|@TIME [--dry-run]",
		Short: "commit new offsets for a group that has no live members",
		Example: `  shale group reset-offsets billing --topic events --to earliest --dry-run
  shale group reset-offsets billing -t events --partition 0 --to -100`,
		Args: exactArgs(1, "name one group"),
	}
	g := addGlobals(cmd)
	f := cmd.Flags()
	topics := f.StringArrayP("topic", "t", nil, "topic whose offsets to reset (repeatable)")
	parts := f.String("partition", "", "only these partitions, comma-separated (one --topic only)")
	to := f.String("to", "", "earliest, latest, offset N, -N (N before the end) or @TIME (ms or RFC 3339)")
	dryRun := f.Bool("dry-run", false, "print the new offsets without committing them")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(*topics) == 0 || *to == "" {
			return usagef("--topic and --to are required")
		}
		spec, err := parseOffsetSpec(*to)
		if err != nil {
			return err
		}
		partitions, err := parsePartitions(*parts)
		if err != nil {
			return err
		}
		if len(partitions) > 0 && len(*topics) > 1 {
			return usagef("--partition needs exactly one --topic")
		}
		return groupResetOffsets(cmd.Context(), g, cmd.OutOrStdout(), args[0], *topics, partitions, spec, *dryRun)
	}
	return cmd
}

func groupResetOffsets(ctx context.Context, g *cliGlobals, stdout io.Writer, group string, topics []string, partitions []int32, spec offsetSpec, dryRun bool) error {
	adm, ctx, done, err := g.adminSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	plan, err := planReset(ctx, adm, group, topics, partitions, spec, dryRun)
	if err != nil {
		return err
	}
	if !dryRun {
		if err := commitReset(ctx, adm, plan); err != nil {
			return err
		}
	}
	if g.json() {
		return writeJSON(stdout, plan)
	}
	return printResetPlan(stdout, plan)
}

// planReset computes the new offsets; unless dryRun it refuses a group with
// live members (errGroupActive).
func planReset(ctx context.Context, adm *kadm.Client, group string, topics []string, partitions []int32, spec offsetSpec, dryRun bool) (resetPlan, error) {
	plan := resetPlan{Group: group, DryRun: dryRun, Partitions: []resetOffset{}}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return plan, err
	}
	if dg, ok := described[group]; ok && len(dg.Members) > 0 && !dryRun {
		return plan, fmt.Errorf("%w: %s is %s with %d members; stop them first", errGroupActive, group, dg.State, len(dg.Members))
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topics...)
	if err != nil {
		return plan, err
	}
	for _, topic := range topics {
		bounds, err := listBounds(ctx, adm, topic, partitions)
		if err != nil {
			return plan, err
		}
		next, err := spec.resolve(ctx, adm, topic, bounds)
		if err != nil {
			return plan, err
		}
		for _, p := range sortedPartitions(next) {
			ro := resetOffset{Topic: topic, Partition: p, OldOffset: -1, NewOffset: next[p], LogEndOffset: bounds[p].end}
			if r, ok := committed.Lookup(topic, p); ok && r.Err == nil {
				ro.OldOffset = r.At
			}
			ro.Lag = max(ro.LogEndOffset-ro.NewOffset, 0)
			plan.Partitions = append(plan.Partitions, ro)
		}
	}
	return plan, nil
}

// commitReset commits the plan's new offsets as a simple (memberless)
// commit.
func commitReset(ctx context.Context, adm *kadm.Client, plan resetPlan) error {
	var offs kadm.Offsets
	for _, r := range plan.Partitions {
		offs.AddOffset(r.Topic, r.Partition, r.NewOffset, -1)
	}
	resp, err := adm.CommitOffsets(ctx, plan.Group, offs)
	if err != nil {
		return err
	}
	return resp.Error()
}

func printResetPlan(w io.Writer, plan resetPlan) error {
	if plan.DryRun {
		fmt.Fprintf(w, "group %s: dry run, nothing committed\n", plan.Group)
	} else {
		fmt.Fprintf(w, "group %s: offsets reset\n", plan.Group)
	}
	t := newTable(w, "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET", "LOG-END-OFFSET", "LAG")
	for _, r := range plan.Partitions {
		t.row(r.Topic, r.Partition, offsetText(r.OldOffset), r.NewOffset, r.LogEndOffset, r.Lag)
	}
	return t.flush()
}
