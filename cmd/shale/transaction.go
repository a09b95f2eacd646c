package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

// The transaction verbs are Kafka's kafka-transactions.sh (KIP-664):
// list, describe, abort a hanging transaction; and describe-producers as
// `shale producer describe TOPIC`.

func newTransactionCmd() *cobra.Command {
	return newGroup("transaction", "transactions: list, describe, abort a hanging one",
		newTransactionListCmd(), newTransactionDescribeCmd(), newTransactionAbortCmd())
}

func newProducerCmd() *cobra.Command {
	return newGroup("producer", "producers: describe a topic's producer state", newProducerDescribeCmd())
}

func newTransactionListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list transactional ids and their state, from every broker", Args: noArgs,
		Example: "shale transaction list --state Ongoing"}
	g := addGlobals(cmd)
	var states []string
	cmd.Flags().StringSliceVar(&states, "state", nil, "only ids in these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a, ctx, done, err := g.admin(cmd.Context())
		if err != nil {
			return err
		}
		defer done()
		txns, err := a.ListTransactions(ctx, states...)
		if err != nil {
			return err
		}
		return printTransactionList(cmd.OutOrStdout(), g.json(), txns)
	}
	return cmd
}

func printTransactionList(w io.Writer, asJSON bool, txns []sdk.ListedTransaction) error {
	type row struct {
		TransactionalID string `json:"transactional_id"`
		Coordinator     int32  `json:"coordinator"`
		ProducerID      int64  `json:"producer_id"`
		State           string `json:"state"`
	}
	rows := []row{}
	for _, t := range txns {
		rows = append(rows, row{t.TransactionalID, t.Coordinator, t.ProducerID, t.State})
	}
	if asJSON {
		return writeJSON(w, rows)
	}
	t := newTable(w, "TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE")
	for _, r := range rows {
		t.row(r.TransactionalID, r.Coordinator, r.ProducerID, r.State)
	}
	return t.flush()
}

// transactionDescription is one id in `shale transaction describe`.
type transactionDescription struct {
	TransactionalID string   `json:"transactional_id"`
	Coordinator     int32    `json:"coordinator"`
	State           string   `json:"state"`
	ProducerID      int64    `json:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch"`
	TimeoutMs       int32    `json:"transaction_timeout_ms"`
	StartTimestamp  int64    `json:"start_timestamp"`
	DurationMs      int64    `json:"duration_ms,omitempty"`
	Partitions      []string `json:"partitions"`
	Error           string   `json:"error,omitempty"`
}

func newTransactionDescribeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "describe TRANSACTIONAL-ID...", Short: "a transactional id's producer, state, timeout and open partitions",
		Args: minArgs(1, "name a transactional id"), Example: "shale transaction describe my-app-0"}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, ids []string) error {
		a, ctx, done, err := g.admin(cmd.Context())
		if err != nil {
			return err
		}
		defer done()
		txns, err := a.DescribeTransactions(ctx, ids...)
		if err != nil {
			return err
		}
		now := time.Now().UnixMilli()
		var out []transactionDescription
		for _, t := range txns {
			d := transactionDescription{TransactionalID: t.TransactionalID, Coordinator: t.Coordinator, State: t.State,
				ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, TimeoutMs: t.TimeoutMillis, StartTimestamp: t.StartTimestamp,
				Partitions: []string{}}
			if t.StartTimestamp > 0 && t.State == "Ongoing" {
				d.DurationMs = now - t.StartTimestamp
			}
			for topic, ps := range t.Partitions {
				for _, p := range ps {
					d.Partitions = append(d.Partitions, fmt.Sprintf("%s-%d", topic, p))
				}
			}
			sort.Strings(d.Partitions)
			if t.Err != nil {
				d.Error = t.Err.Error()
			}
			out = append(out, d)
		}
		if g.json() {
			return writeJSON(cmd.OutOrStdout(), out)
		}
		t := newTable(cmd.OutOrStdout(), "TRANSACTIONAL-ID", "COORDINATOR", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "DURATION-MS", "PARTITIONS", "ERROR")
		for _, d := range out {
			t.row(d.TransactionalID, d.Coordinator, d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMs, d.DurationMs, strings.Join(d.Partitions, ","), d.Error)
		}
		return t.flush()
	}
	return cmd
}

func newTransactionAbortCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "abort", Short: "abort the hanging transaction open at an offset of a partition (writes its ABORT marker)",
		Args: noArgs, Example: "shale transaction abort --topic orders --partition 0 --start-offset 1234"}
	g := addGlobals(cmd)
	var topic string
	var partition int32
	var start int64
	cmd.Flags().StringVar(&topic, "topic", "", "the partition's topic")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition")
	cmd.Flags().Int64Var(&start, "start-offset", -1, "the first offset of the open transaction (shale producer describe shows it)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if topic == "" || partition < 0 || start < 0 {
			return usagef("give --topic, --partition and --start-offset")
		}
		a, ctx, done, err := g.admin(cmd.Context())
		if err != nil {
			return err
		}
		defer done()
		p, err := a.AbortTransaction(ctx, topic, partition, start)
		if err != nil {
			return topicNotFound(topic, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "aborted the transaction of producer %d (epoch %d) at %s-%d offset %d\n", p.ProducerID, p.ProducerEpoch, topic, partition, start)
		return nil
	}
	return cmd
}

func newProducerDescribeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "describe TOPIC", Short: "the producers of each partition of a topic, with their open transactions",
		Args: exactArgs(1, "name a topic"), Example: "shale producer describe orders"}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return producerDescribe(cmd.Context(), g, cmd.OutOrStdout(), args[0])
	}
	return cmd
}

func producerDescribe(ctx context.Context, g *cliGlobals, w io.Writer, topic string) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	ps, err := a.DescribeProducers(ctx, topic)
	if err != nil {
		return topicNotFound(topic, err)
	}
	type row struct {
		Partition             int32 `json:"partition"`
		Leader                int32 `json:"leader"`
		ProducerID            int64 `json:"producer_id"`
		ProducerEpoch         int16 `json:"producer_epoch"`
		LastSequence          int32 `json:"last_sequence"`
		LastTimestamp         int64 `json:"last_timestamp"`
		CoordinatorEpoch      int32 `json:"coordinator_epoch"`
		CurrentTxnStartOffset int64 `json:"current_transaction_start_offset"`
	}
	rows := []row{}
	for _, p := range ps {
		rows = append(rows, row{p.Partition, p.Leader, p.ProducerID, p.ProducerEpoch, p.LastSequence, p.LastTimestamp, p.CoordinatorEpoch, p.CurrentTxnStartOffset})
	}
	if g.json() {
		return writeJSON(w, rows)
	}
	t := newTable(w, "PARTITION", "LEADER", "PRODUCER-ID", "EPOCH", "LAST-SEQUENCE", "LAST-TIMESTAMP", "COORDINATOR-EPOCH", "TXN-START-OFFSET")
	for _, r := range rows {
		start := "-"
		if r.CurrentTxnStartOffset >= 0 {
			start = fmt.Sprint(r.CurrentTxnStartOffset)
		}
		t.row(r.Partition, r.Leader, r.ProducerID, r.ProducerEpoch, r.LastSequence, r.LastTimestamp, r.CoordinatorEpoch, start)
	}
	return t.flush()
}
