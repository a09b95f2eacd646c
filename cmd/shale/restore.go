package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
)

// `shale topic restore` and `shale cluster restore`: a node restores
// topics from its bucket (adminapi.RestorePath); the CLI then commits the
// restored groups' offsets over Kafka (OffsetCommit through kadm).

const restoreLong = `The node asked (--admin) reads its bucket alone: every uploaded segment's
manifest, the topic descriptors and the format marker. For each topic it
recreates the topic under its old id with its partitions, replication factor
and configs, the uploaded segments of one leader-epoch lineage, the leader-epoch
history and the producer state of the last upload, and a leader epoch above
every restored one; the committed offsets of the topic's groups come from the
uploaded segments of __consumer_offsets when that topic was tiered, and are
then committed here over Kafka (--bootstrap). What the bucket did not hold is
listed under MISSING: offsets never uploaded (at least the high watermark at
the last upload minus the restored end), gaps, a missing descriptor. Nothing
is guessed silently. Restore on a cluster before producing to it: producer
ids are raised above the restored ones. See docs/bucket-format.md.`

func newTopicRestoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "restore TOPIC... [--dry-run]",
		Short:   "bring back deleted topics, or those of a lost cluster, from the bucket",
		Long:    restoreLong,
		Example: "  shale topic restore orders --admin 127.0.0.1:9644 --bootstrap 127.0.0.1:9092 --dry-run",
		Args:    minArgs(1, "no topic named"),
	}
	return restoreCmd(cmd, func(topics []string) adminapi.RestoreRequest { return adminapi.RestoreRequest{Topics: topics} })
}

func newClusterRestoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "restore [--dry-run]",
		Short:   "rebuild every topic the bucket holds on this (new, empty) cluster",
		Long:    restoreLong,
		Example: "  shale cluster restore --admin 127.0.0.1:9644 --bootstrap 127.0.0.1:9092",
		Args:    noArgs,
	}
	return restoreCmd(cmd, func([]string) adminapi.RestoreRequest { return adminapi.RestoreRequest{All: true} })
}

func restoreCmd(cmd *cobra.Command, req func([]string) adminapi.RestoreRequest) *cobra.Command {
	g := addGlobals(cmd)
	admins := addAdmin(cmd, "admin HTTP address of a node (host:port or URL)")
	dry := cmd.Flags().Bool("dry-run", false, "report what would be restored; change nothing")
	wait := cmd.Flags().Duration("restore-timeout", 10*time.Minute, "how long the restore may take")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		client, addrs, err := admins.client(*wait)
		if err != nil {
			return err
		}
		r := req(args)
		r.DryRun = *dry
		rep, err := client.Restore(cmd.Context(), addrs[0], r)
		if err != nil {
			return err
		}
		var commitErr error
		if !rep.DryRun {
			commitErr = commitRestoredOffsets(cmd.Context(), g, &rep)
		}
		if g.json() {
			if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
		} else if err := printRestore(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
		if commitErr != nil {
			return commitErr
		}
		for _, t := range rep.Topics {
			if t.Status == "refused" || t.Status == "not found" {
				return errors.New("some topics were not restored")
			}
		}
		return nil
	}
	return cmd
}

// commitRestoredOffsets commits each restored topic's group offsets,
// retrying for up to a minute while the new partitions get their leaders.
// A group that cannot be committed is added to its topic's Missing.
func commitRestoredOffsets(ctx context.Context, g *cliGlobals, rep *adminapi.RestoreReport) error {
	byGroup := map[string]kadm.Offsets{}
	for _, t := range rep.Topics {
		if t.Status != "restored" {
			continue
		}
		for _, o := range t.GroupOffsets {
			os := byGroup[o.Group]
			if os == nil {
				os = kadm.Offsets{}
				byGroup[o.Group] = os
			}
			os.Add(kadm.Offset{Topic: t.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: o.LeaderEpoch,
				Metadata: o.Metadata})
		}
	}
	if len(byGroup) == 0 {
		return nil
	}
	a, _, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	adm := a.Kadm()
	var failed []string
	for group, os := range byGroup {
		deadline := time.Now().Add(time.Minute)
		for {
			cctx, cancel := context.WithTimeout(ctx, g.timeout)
			resp, err := adm.CommitOffsets(cctx, group, os)
			cancel()
			if err == nil {
				err = resp.Error()
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				failed = append(failed, fmt.Sprintf("group %s: %v", group, err))
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if len(failed) > 0 {
		for i := range rep.Topics {
			rep.Topics[i].Missing = append(rep.Topics[i].Missing, failed...)
		}
		return fmt.Errorf("committing restored group offsets: %v", failed)
	}
	return nil
}

func printRestore(w io.Writer, rep adminapi.RestoreReport) error {
	mode := ""
	if rep.DryRun {
		mode = " (dry run: nothing changed)"
	}
	fmt.Fprintf(w, "bucket format version %d%s\ngroup offsets: %s\n", rep.FormatVersion, mode, rep.GroupOffsets)
	t := newTable(w, "TOPIC", "STATUS", "PARTITIONS", "RF", "SEGMENTS", "OFFSETS", "NOT UPLOADED", "GROUP OFFSETS")
	for _, tp := range rep.Topics {
		segs, offs, lost := 0, int64(0), int64(0)
		unknown := false
		for _, p := range tp.Partition {
			segs += p.Segments
			offs += p.NextOffset - p.LogStartOffset
			if p.NotUploaded < 0 && p.Segments > 0 {
				unknown = true
			} else if p.NotUploaded > 0 {
				lost += p.NotUploaded
			}
		}
		ls := fmt.Sprint(lost)
		if unknown {
			ls += "+?"
		}
		t.row(tp.Topic, tp.Status, fmt.Sprint(tp.Partitions), fmt.Sprint(tp.ReplicationFactor), fmt.Sprint(segs), fmt.Sprint(offs),
			ls, fmt.Sprint(len(tp.GroupOffsets)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, tp := range rep.Topics {
		if tp.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", tp.Topic, tp.Error)
		}
		for _, m := range tp.Missing {
			fmt.Fprintf(w, "%s: MISSING %s\n", tp.Topic, m)
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "bucket: %s\n", p)
	}
	return nil
}
