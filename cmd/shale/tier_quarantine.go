package main

import (
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/adminapi"
)

// errRestoreIncomplete: a restore refused or not finished for some entry.
var errRestoreIncomplete = errors.New("some entries were not restored")

// newTierQuarantineCmd is `shale tier quarantine list|restore|purge`.
func newTierQuarantineCmd() *cobra.Command {
	list := &cobra.Command{
		Use:   "list [--topic T]",
		Short: "the remote deletes in quarantine: segment, offsets, reason, when its objects are purged",
		Long: `List the quarantined remote deletes: the segments (and objects) that
retention, DeleteRecords, topic deletion or orphan cleanup took out of the
bucket's remote log, kept for the topic's remote.delete.grace.ms before
their objects are deleted. Any node answers for the whole cluster.`,
		Example: `  shale tier quarantine list --topic events`,
		Args:    noArgs,
	}
	restore := &cobra.Command{
		Use:   "restore --topic T [--partition P] [--id ID]...",
		Short: "bring quarantined segments back into their partition's remote log",
		Long: `Restore the selected entries: the partition leader puts their segments
back into the remote log and moves the log start back to the first offset
they hold, so that consumers read those records again. It refuses (and
says why, exit code 1) when retention.ms/retention.bytes would delete them
again at once (raise them first), when the restored offsets would leave a
gap (restore the entries in between too), or when they overlap retained
segments. A deleted topic's segments and orphan objects cannot be restored.`,
		Example: `  shale topic alter-config events --set retention.ms=-1
  shale tier quarantine restore --topic events`,
		Args: noArgs,
	}
	purge := &cobra.Command{
		Use:     "purge --topic T [--partition P] [--id ID]...",
		Short:   "delete quarantined objects now, before their grace ends",
		Example: `  shale tier quarantine purge --topic events --partition 0`,
		Args:    noArgs,
	}
	type flags struct {
		admins    *adminAddrs
		topic     *string
		partition *int32
		ids       *[]string
		output    *outputFormat
		timeout   *time.Duration
	}
	add := func(cmd *cobra.Command, selector bool) flags {
		f := flags{admins: addAdmin(cmd, "admin HTTP address of a node (host:port or URL)"),
			topic: cmd.Flags().String("topic", "", "the topic (required but for list)"), output: addOutput(cmd),
			timeout: cmd.Flags().Duration("timeout", defaultTimeout, "request timeout")}
		if selector {
			f.partition = cmd.Flags().Int32("partition", -1, "only this partition")
			f.ids = cmd.Flags().StringSlice("id", nil, "only these entries (repeatable or comma-separated)")
		}
		return f
	}
	lf, rf, pf := add(list, false), add(restore, true), add(purge, true)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		client, addrs, err := lf.admins.client(*lf.timeout)
		if err != nil {
			return err
		}
		q, err := client.QuarantineList(cmd.Context(), addrs[0], *lf.topic)
		if err != nil {
			return err
		}
		return writeQuarantine(cmd.OutOrStdout(), q, lf.output.json(), false)
	}
	request := func(f flags) (adminapi.QuarantineRequest, error) {
		if *f.topic == "" {
			return adminapi.QuarantineRequest{}, usagef("name the topic with --topic")
		}
		req := adminapi.QuarantineRequest{Topic: *f.topic, IDs: *f.ids, WaitMs: f.timeout.Milliseconds()}
		if *f.partition >= 0 {
			req.Partition = f.partition
		}
		return req, nil
	}
	restore.RunE = func(cmd *cobra.Command, _ []string) error {
		req, err := request(rf)
		if err != nil {
			return err
		}
		client, addrs, err := rf.admins.client(*rf.timeout + 5*time.Second)
		if err != nil {
			return err
		}
		q, err := client.QuarantineRestore(cmd.Context(), addrs[0], req)
		if err != nil {
			return err
		}
		if err := writeQuarantine(cmd.OutOrStdout(), q, rf.output.json(), true); err != nil {
			return err
		}
		for _, e := range q.Entries {
			if e.Result != "restored" {
				return errRestoreIncomplete
			}
		}
		return nil
	}
	purge.RunE = func(cmd *cobra.Command, _ []string) error {
		req, err := request(pf)
		if err != nil {
			return err
		}
		client, addrs, err := pf.admins.client(*pf.timeout)
		if err != nil {
			return err
		}
		q, err := client.QuarantinePurge(cmd.Context(), addrs[0], req)
		if err != nil {
			return err
		}
		return writeQuarantine(cmd.OutOrStdout(), q, pf.output.json(), true)
	}
	return newGroup("quarantine", "remote deletes kept for remote.delete.grace.ms: list, restore, purge", list, restore, purge)
}

// writeQuarantine prints entries as JSON or a table (with a RESULT column
// for a restore's or a purge's answer).
func writeQuarantine(w io.Writer, q adminapi.Quarantine, asJSON, result bool) error {
	if asJSON {
		return writeJSON(w, q)
	}
	cols := []string{"TOPIC", "PARTITION", "ID", "REASON", "STATE", "BASE-OFFSET", "END-OFFSET", "BYTES", "PURGE-AFTER"}
	if result {
		cols = append(cols, "RESULT")
	}
	t := newTable(w, append(cols, "NOTE")...)
	for _, e := range q.Entries {
		row := []any{e.Topic, e.Partition, e.ID, e.Reason, e.State, e.BaseOffset, e.EndOffset, e.Bytes,
			e.PurgeAfter.Format(time.RFC3339)}
		if result {
			row = append(row, e.Result)
		}
		t.row(append(row, e.Note)...)
	}
	t.flush()
	return nil
}
