package main

import (
	"github.com/spf13/cobra"

	"github.com/shale-io/shale/segment/dumplog"
)

func newSegmentCmd() *cobra.Command {
	dump := &cobra.Command{
		Use:   "dump [--records] FILE...",
		Short: "print .log, .index, .timeindex and .txnindex files (as kafka-dump-log does)",
		Args:  minArgs(1, "name a file"),
	}
	records := dump.Flags().Bool("records", false, "print every record: offset, timestamp, key, value, headers")
	output := addOutput(dump)
	maxDecomp := dump.Flags().Int("max-decompressed", 64<<20, "largest decompressed batch to decode")
	dump.RunE = func(cmd *cobra.Command, files []string) error {
		return dumplog.Dump(cmd.OutOrStdout(), files, dumplog.Options{Records: *records, JSON: output.json(), MaxDecompressed: *maxDecomp})
	}
	return newGroup("segment", "segment files on local disk", dump)
}
