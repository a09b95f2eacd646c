package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// clusterStatus is `shale cluster status`: the nodes, the controller, and
// each partition's leader, epoch, replicas and ISR, as any node reports them
// through the Kafka protocol.
type clusterStatusOut struct {
	ClusterID  string             `json:"cluster_id"`
	Controller int32              `json:"controller"`
	Brokers    []clusterBroker    `json:"brokers"`
	Partitions []clusterPartition `json:"partitions"`
}

type clusterBroker struct {
	NodeID int32  `json:"node_id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	Rack   string `json:"rack,omitempty"`
}

type clusterPartition struct {
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Error       string  `json:"error,omitempty"`
}

func newClusterCmd() *cobra.Command {
	status := &cobra.Command{
		Use:   "status [--topic T]",
		Short: "nodes, controller, and each partition's leader, epoch, replicas and ISR",
		Args:  noArgs,
	}
	g := addGlobals(status)
	topic := status.Flags().String("topic", "", "only this topic")
	status.RunE = func(cmd *cobra.Command, _ []string) error {
		return clusterStatus(cmd.Context(), g, cmd.OutOrStdout(), *topic)
	}
	return newGroup("cluster", "the cluster as any node reports it; rebalance", status, newClusterRebalanceCmd(), newClusterRestoreCmd())
}

func clusterStatus(ctx context.Context, g *cliGlobals, stdout io.Writer, topic string) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	var topics []string
	if topic != "" {
		topics = []string{topic}
	}
	info, err := a.DescribeCluster(ctx, topics...)
	if err != nil {
		return err
	}
	out := clusterStatusOut{ClusterID: info.ClusterID, Controller: info.Controller}
	for _, b := range info.Brokers {
		out.Brokers = append(out.Brokers, clusterBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	for _, t := range info.Topics {
		for _, p := range t.Partitions {
			cp := clusterPartition{Topic: t.Name, Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR}
			if p.Err != nil {
				cp.Error = p.Err.Error()
			}
			out.Partitions = append(out.Partitions, cp)
		}
	}
	if g.json() {
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "cluster %s, controller %d\n\n", out.ClusterID, out.Controller)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tRACK\tCONTROLLER")
	for _, b := range out.Brokers {
		ctrl := ""
		if b.NodeID == out.Controller {
			ctrl = "*"
		}
		fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, b.Rack, ctrl)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tERROR")
	for _, p := range out.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Topic, p.Partition, p.Leader, p.LeaderEpoch, ints(p.Replicas), ints(p.ISR), p.Error)
	}
	return tw.Flush()
}

func ints(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}
