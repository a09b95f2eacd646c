package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/sdk"
)

// `shale topic fork SRC NEW --at N|@TIME`: a node makes a point-in-time
// fork of SRC from its remote segment metadata (adminapi.ForkPath).

const forkLong = `NEW gets SRC's partition count and configs, and as history SRC's records below
the cut: --at N (every partition's offsets below N) or --at @TIME (ms or RFC
3339, as shale consume takes them: per partition the first offset whose
timestamp is >= TIME). A cut inside a record batch moves down to the batch's
first offset; the report gives each partition's cut as made. No object is
copied: NEW's remote metadata lists SRC's segment objects, and NEW is written
from the cut on into objects of its own. Objects are reference-counted: the
retention, DeleteRecords, deletion and orphan cleanup of either topic leave
what the other still lists, so deleting SRC leaves NEW readable. Only
uploaded offsets can be forked: a cut past a partition's uploaded end is
refused with the offset up to which a fork is possible now. See
docs/bucket-format.md (Forks).`

func newTopicForkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "fork SRC NEW --at N|@TIME",
		Short:   "make a new topic whose history is another's up to a point, without copying its objects",
		Long:    forkLong,
		Example: "  shale topic fork orders orders-yesterday --at @2026-12-04T00:00:00Z --admin 127.0.0.1:9644",
		Args:    exactArgs(2, "name the source topic and the new one"),
	}
	g := addGlobals(cmd)
	admins := addAdmin(cmd, "admin HTTP address of a node (host:port or URL)")
	at := cmd.Flags().String("at", "", "the cut: offset N (exclusive) or @TIME (ms or RFC 3339)")
	wait := cmd.Flags().Duration("fork-timeout", 2*time.Minute, "how long the fork may take")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req := adminapi.ForkRequest{Source: args[0], Name: args[1]}
		pos, err := parsePosition(*at)
		if err != nil || *at == "" {
			return usagef("--at takes an offset N or @TIME")
		}
		switch pos.Kind() {
		case sdk.PositionOffset:
			req.AtOffset = pos.Offset()
		case sdk.PositionTime:
			ms := pos.Time().UnixMilli()
			req.AtTimestamp = &ms
		default:
			return usagef("--at takes an offset N or @TIME")
		}
		client, addrs, err := admins.client(*wait)
		if err != nil {
			return err
		}
		rep, err := client.Fork(cmd.Context(), addrs[0], req)
		if err != nil {
			return err
		}
		if g.json() {
			return writeJSON(cmd.OutOrStdout(), rep)
		}
		return printFork(cmd.OutOrStdout(), rep)
	}
	return cmd
}

func printFork(w io.Writer, rep adminapi.ForkReport) error {
	if _, err := fmt.Fprintf(w, "forked %s (id %s) from %s (id %s)\nPARTITION\tLOG_START\tCUT\tSEGMENTS\tSTRADDLED\n",
		rep.Topic, rep.TopicID, rep.Source, rep.SourceID); err != nil {
		return err
	}
	for _, p := range rep.Partitions {
		if _, err := fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%v\n", p.Partition, p.LogStartOffset, p.Cut, p.Segments, p.Straddled); err != nil {
			return err
		}
	}
	return nil
}
