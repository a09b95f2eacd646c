package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/sdk"
)

// `shale partition elect-preferred` moves leadership back to preferred
// replicas, as Kafka's `kafka-leader-election.sh --election-type PREFERRED`
// does, over ElectLeaders.

type electionOut struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Result    string `json:"result"` // elected, already preferred, or the error
	Error     bool   `json:"error"`
}

func newPartitionCmd() *cobra.Command {
	return newGroup("partition", "partition leadership and placement: elect-leaders, elect-preferred, reassign",
		newPartitionElectLeadersCmd(), newPartitionElectPreferredCmd(), newPartitionReassignCmd())
}

func newPartitionElectLeadersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "elect-leaders --preferred|--unclean [TOPIC...]", Short: "elect leaders: preferred replicas, or unclean for leaderless partitions",
		Long: "With --preferred, as elect-preferred: leadership of every partition of the named topics (all when none is " +
			"named) moves to its preferred replica when that one is live and in the ISR (ElectLeaders PREFERRED). With " +
			"--unclean, every partition without a leader gets one even from outside the ISR (ElectLeaders UNCLEAN, " +
			"kafka-leader-election --election-type UNCLEAN): what only the lost in-sync replicas held is lost. Exits 1 " +
			"when any partition could not be elected.",
		Example: "shale partition elect-leaders --preferred orders --bootstrap 127.0.0.1:9092\nshale partition elect-leaders --unclean payments",
		Args:    cobra.ArbitraryArgs}
	g := addGlobals(cmd)
	preferred := cmd.Flags().Bool("preferred", false, "move leadership to preferred replicas")
	unclean := cmd.Flags().Bool("unclean", false, "elect a leader, possibly out of sync, where there is none")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *preferred == *unclean {
			return usagef("give exactly one of --preferred and --unclean")
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			elect, kind := a.ElectPreferredLeaders, "preferred"
			if *unclean {
				elect, kind = a.ElectUncleanLeaders, "unclean"
			}
			res, err := elect(ctx, args...)
			if err != nil {
				return err
			}
			return printElections(cmd, g, res, kind)
		})
	}
	return cmd
}

func newPartitionElectPreferredCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "elect-preferred [TOPIC...]", Short: "move leadership to each partition's preferred replica",
		Long: "Moves leadership of every partition of the named topics (all topics when none is named) to its preferred " +
			"replica, the first assigned, with ElectLeaders PREFERRED (kafka-leader-election --election-type PREFERRED). " +
			"A partition moves only when its preferred replica is live and in the ISR (else PREFERRED_LEADER_NOT_AVAILABLE); " +
			"one already led by it is reported as already preferred. Exits 1 when any partition could not be moved. It is " +
			"elect-leaders --preferred under its older name. The " +
			"controller does the same by itself when auto_leader_rebalance_enable is on (docs/replication.md).",
		Example: "shale partition elect-preferred orders payments --bootstrap 127.0.0.1:9092", Args: cobra.ArbitraryArgs}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			res, err := a.ElectPreferredLeaders(ctx, args...)
			if err != nil {
				return err
			}
			return printElections(cmd, g, res, "preferred")
		})
	}
	return cmd
}

// printElections prints ElectLeaders outcomes; an error when any partition
// could not be elected.
func printElections(cmd *cobra.Command, g *cliGlobals, res []sdk.LeaderElection, kind string) error {
	out := make([]electionOut, 0, len(res))
	failed := 0
	for _, r := range res {
		o := electionOut{Topic: r.Topic, Partition: r.Partition, Result: "elected"}
		switch {
		case errors.Is(r.Err, kerr.ElectionNotNeeded) && kind == "preferred":
			o.Result = "already preferred"
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			o.Result = "has a leader"
		case r.Err != nil:
			o.Result, o.Error = r.Err.Error(), true
			failed++
		}
		out = append(out, o)
	}
	if g.json() {
		if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	} else {
		t := newTable(cmd.OutOrStdout(), "TOPIC", "PARTITION", "RESULT")
		for _, o := range out {
			t.row(o.Topic, o.Partition, o.Result)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if failed > 0 && kind == "preferred" {
		return fmt.Errorf("%d of %d partitions could not be moved to their preferred replica", failed, len(out))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions could not be elected", failed, len(out))
	}
	return nil
}
