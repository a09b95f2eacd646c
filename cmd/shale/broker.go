package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

// `shale broker` lists the registered brokers and unregisters
// decommissioned ones, as Kafka's `kafka-cluster.sh list-endpoints
// --include-fenced-brokers` and `kafka-cluster.sh unregister --id` do.

type brokerOut struct {
	NodeID int32  `json:"node_id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	Rack   string `json:"rack,omitempty"`
	Fenced bool   `json:"fenced"`
}

func newBrokerCmd() *cobra.Command {
	return newGroup("broker", "the registered brokers: list (fenced ones too), decommission, recommission, unregister",
		newBrokerListCmd(), newBrokerDecommissionCmd(), newBrokerRecommissionCmd(), newBrokerUnregisterCmd())
}

func newBrokerListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list the registered brokers, live and fenced",
		Long: "Lists every registered broker (DescribeCluster with IncludeFencedBrokers): the live ones and the fenced " +
			"ones, down but still registered, at the address they last advertised. Replicas may be placed on either; " +
			"only live brokers lead or count in an ISR.",
		Example: "shale broker list --bootstrap 127.0.0.1:9092", Args: noArgs}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			brokers, err := a.ListBrokers(ctx)
			if err != nil {
				return err
			}
			out := make([]brokerOut, 0, len(brokers))
			for _, b := range brokers {
				out = append(out, brokerOut{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, Fenced: b.Fenced})
			}
			if g.json() {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			t := newTable(cmd.OutOrStdout(), "NODE", "ADDRESS", "RACK", "STATE")
			for _, b := range out {
				state := "live"
				if b.Fenced {
					state = "fenced"
				}
				rack := b.Rack
				if rack == "" {
					rack = "-"
				}
				t.row(b.NodeID, fmt.Sprintf("%s:%d", b.Host, b.Port), rack, state)
			}
			return t.flush()
		})
	}
	return cmd
}

func newBrokerUnregisterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "unregister ID", Short: "remove a decommissioned broker's registration for good",
		Long: "Removes broker ID's registration (Kafka's UnregisterBroker): a fenced broker, one that is down, stays " +
			"registered so that replicas can still be placed on it, until it is unregistered. The broker must be " +
			"stopped. Partitions that still name it keep it: move them first (AlterPartitionReassignments).",
		Example: "shale broker unregister 4 --bootstrap 127.0.0.1:9092", Args: exactArgs(1, "name the broker id")}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := strconv.ParseInt(args[0], 10, 32)
		if err != nil || id < 0 {
			return usagef("broker id %q: want a node id", args[0])
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			if err := a.UnregisterBroker(ctx, int32(id)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "broker %d: unregistered\n", id)
			return nil
		})
	}
	return cmd
}
