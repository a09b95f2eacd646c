package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/adminapi"
)

func newTierCmd() *cobra.Command {
	status := &cobra.Command{
		Use:   "status [--admin ADDR] [--topic T]",
		Short: "per partition: log start, local log start, high watermark, remote segments, upload lag",
		Long: `Read the tier status of the node behind --admin (its admin HTTP address): per
local partition its log start, local log start, high watermark, last tiered
offset, remote segments and bytes, and upload lag.`,
		Example: "  shale tier status --admin 127.0.0.1:9644 --topic events",
		Args:    noArgs,
	}
	admin := addAdmin(status, "admin HTTP address of the node (host:port or URL)")
	topic := status.Flags().String("topic", "", "only this topic")
	output := addOutput(status)
	timeout := status.Flags().Duration("timeout", defaultTimeout, "request timeout")
	status.RunE = func(cmd *cobra.Command, _ []string) error {
		if len(admin.addrs) != 1 {
			return usagef("name one node's admin address")
		}
		client, addrs, err := admin.client(*timeout)
		if err != nil {
			return err
		}
		st, err := client.TierStatus(cmd.Context(), addrs[0], *topic)
		if err != nil {
			return err
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), st)
		}
		writeTierStatus(cmd.OutOrStdout(), st)
		return nil
	}
	return newGroup("tier", "the cold tier as a node sees it", status)
}

func writeTierStatus(w io.Writer, st adminapi.TierStatus) {
	t := newTable(w, "TOPIC", "PARTITION", "LOG-START", "LOCAL-LOG-START", "HIGH-WATERMARK", "LAST-TIERED",
		"REMOTE-SEGMENTS", "REMOTE-BYTES", "UPLOAD-LAG-SEGMENTS", "UPLOAD-LAG-BYTES", "UPLOAD-LAG-OFFSETS")
	for _, p := range st.Partitions {
		t.row(p.Topic, p.Partition, p.LogStartOffset, p.LocalLogStartOffset, p.HighWatermark, p.LastTieredOffset,
			p.RemoteSegments, p.RemoteBytes, p.UploadLagSegments, p.UploadLagBytes, p.UploadLagOffsets)
	}
	t.flush()
}
