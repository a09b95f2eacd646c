package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/adminapi"
)

func newTierCmd() *cobra.Command {
	status := &cobra.Command{
		Use:   "status [--admin ADDR]... [--topic T] [--internal]",
		Short: "per node and partition: log start, local log start, high watermark, remote segments, upload lag",
		Long: `Ask each node behind --admin (their admin HTTP addresses, repeatable or
comma-separated) for its tier status: per partition it leads, its log start,
local log start, high watermark, last tiered offset, remote segments and
bytes, and upload lag. Internal topics (names starting with "__", such as
__consumer_offsets) are left out unless --internal is given. A node that does
not answer is reported on stderr and makes the exit code 1, after the others
are printed.`,
		Example: `  shale tier status --admin 127.0.0.1:9644 --topic events
  shale tier status --admin 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646 --output json`,
		Args: noArgs,
	}
	admins := addAdmin(status, "admin HTTP address of a node (host:port or URL); repeatable or comma-separated")
	topic := status.Flags().String("topic", "", "only this topic")
	internal := status.Flags().Bool("internal", false, "also internal topics (names starting with \"__\")")
	output := addOutput(status)
	timeout := status.Flags().Duration("timeout", defaultTimeout, "request timeout per node")
	status.RunE = func(cmd *cobra.Command, _ []string) error {
		client, addrs, err := admins.client(*timeout)
		if err != nil {
			return err
		}
		return tierStatus(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), client, addrs, *topic, *internal, output.json())
	}
	return newGroup("tier", "the cold tier as the nodes see it, and the quarantine of its deletes", status, newTierQuarantineCmd())
}

// tierStatus asks every node in addrs at once and prints what answered:
// a JSON list of the nodes' statuses, or one table with a NODE column.
func tierStatus(ctx context.Context, stdout, stderr io.Writer, client adminapi.Client, addrs []string, topic string, internal,
	asJSON bool) error {
	sts := make([]adminapi.TierStatus, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { sts[i], errs[i] = client.TierStatus(ctx, a, topic) })
	}
	wg.Wait()
	var failed error
	got := []adminapi.TierStatus{}
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "shale tier status: %s: %v\n", addrs[i], err)
			failed = errSomeNodes
			continue
		}
		got = append(got, filterTierStatus(sts[i], internal))
	}
	if asJSON {
		if err := writeJSON(stdout, got); err != nil {
			return err
		}
		return failed
	}
	if len(got) > 0 {
		writeTierStatus(stdout, got)
	}
	return failed
}

// filterTierStatus drops the partitions of internal topics unless internal.
func filterTierStatus(st adminapi.TierStatus, internal bool) adminapi.TierStatus {
	out := adminapi.TierStatus{NodeID: st.NodeID, Partitions: []adminapi.TierPartitionStatus{}}
	for _, p := range st.Partitions {
		if internal || !strings.HasPrefix(p.Topic, "__") {
			out.Partitions = append(out.Partitions, p)
		}
	}
	return out
}

func writeTierStatus(w io.Writer, sts []adminapi.TierStatus) {
	t := newTable(w, "NODE", "TOPIC", "PARTITION", "LOG-START", "LOCAL-LOG-START", "HIGH-WATERMARK", "LAST-TIERED",
		"REMOTE-SEGMENTS", "REMOTE-BYTES", "UPLOAD-LAG-SEGMENTS", "UPLOAD-LAG-BYTES", "UPLOAD-LAG-OFFSETS")
	for _, st := range sts {
		for _, p := range st.Partitions {
			t.row(st.NodeID, p.Topic, p.Partition, p.LogStartOffset, p.LocalLogStartOffset, p.HighWatermark, p.LastTieredOffset,
				p.RemoteSegments, p.RemoteBytes, p.UploadLagSegments, p.UploadLagBytes, p.UploadLagOffsets)
		}
	}
	t.flush()
}
