package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

// resetPlan is `shale group reset-offsets`'s output: one row per partition.
type resetPlan struct {
	Group string `json:"group"`
	// Type is "share" for a KIP-932 share group (OldOffset and NewOffset
	// are share-partition start offsets), else "consumer".
	Type       string        `json:"type"`
	DryRun     bool          `json:"dry_run"`
	Partitions []resetOffset `json:"partitions"`
}

// resetOffset is one partition's move; OldOffset -1 means nothing was
// committed (a share-partition without a state).
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
		Short: "commit new offsets for a group that has no live members (a share group: new start offsets)",
		Example: `  shale group reset-offsets billing --topic events --to earliest --dry-run
  shale group reset-offsets billing -t events --partition 0 --to -100`,
		Args: exactArgs(1, "name one group"),
	}
	g := addGlobals(cmd)
	cmd.ValidArgsFunction = onlyFirst(completeGroups(g))
	f := cmd.Flags()
	topics := f.StringArrayP("topic", "t", nil, "topic whose offsets to reset (repeatable)")
	parts := f.String("partition", "", "only these partitions, comma-separated (one --topic only)")
	to := f.String("to", "", "earliest, latest, offset N, -N (N before the end) or @TIME (ms or RFC 3339)")
	dryRun := f.Bool("dry-run", false, "print the new offsets without committing them")
	cmd.RegisterFlagCompletionFunc("topic", completeTopics(g))
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(*topics) == 0 || *to == "" {
			return usagef("--topic and --to are required")
		}
		pos, err := parsePosition(*to)
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
		return groupResetOffsets(cmd.Context(), g, cmd.OutOrStdout(), args[0], *topics, partitions, pos, *dryRun)
	}
	return cmd
}

func groupResetOffsets(ctx context.Context, g *cliGlobals, stdout io.Writer, group string, topics []string, partitions []int32, pos sdk.Position, dryRun bool) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	// A KIP-932 share group's start offsets move by AlterShareGroupOffsets,
	// any other group's committed offsets by OffsetCommit.
	plan, commit, typ := a.PlanShareOffsetReset, a.CommitShareOffsetReset, "share"
	if _, err := a.DescribeShareGroup(ctx, group); errors.Is(err, sdk.ErrGroupNotFound) {
		plan, commit, typ = a.PlanOffsetReset, a.CommitOffsetReset, "consumer"
	} else if err != nil {
		return err
	}
	moves, err := plan(ctx, group, pos, topics, partitions...)
	if err != nil {
		if len(topics) == 1 {
			err = topicNotFound(topics[0], err)
		}
		return err
	}
	if !dryRun {
		err := commit(ctx, group, moves)
		if errors.Is(err, sdk.ErrGroupNotEmpty) {
			return fmt.Errorf("%w: stop them first: %w", errGroupActive, err)
		}
		if err != nil {
			return err
		}
	}
	out := resetPlan{Group: group, Type: typ, DryRun: dryRun, Partitions: []resetOffset{}}
	for _, m := range moves {
		out.Partitions = append(out.Partitions, resetOffset{Topic: m.Topic, Partition: m.Partition, OldOffset: m.Old,
			NewOffset: m.New, LogEndOffset: m.End, Lag: m.Lag})
	}
	if g.json() {
		return writeJSON(stdout, out)
	}
	return printResetPlan(stdout, out)
}

func printResetPlan(w io.Writer, plan resetPlan) error {
	what := "offsets"
	if plan.Type == "share" {
		what = "share group start offsets"
	}
	if plan.DryRun {
		fmt.Fprintf(w, "group %s: dry run, nothing committed\n", plan.Group)
	} else {
		fmt.Fprintf(w, "group %s: %s reset\n", plan.Group, what)
	}
	t := newTable(w, "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET", "LOG-END-OFFSET", "LAG")
	for _, r := range plan.Partitions {
		t.row(r.Topic, r.Partition, offsetText(r.OldOffset), r.NewOffset, r.LogEndOffset, r.Lag)
	}
	return t.flush()
}
