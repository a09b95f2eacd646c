package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/adminapi"
)

func newReplicationCmd() *cobra.Command {
	status := &cobra.Command{
		Use:   "status [--admin ADDR]... [--topic T] [--under-replicated [--max-lag N]]",
		Short: "per node: each replica's offsets and ISR, followers' lag, replica fetchers",
		Long: `Ask each node behind --admin (their admin HTTP addresses, repeatable or
comma-separated) for its local replicas: role, leader epoch, offsets, replicas
and ISR; on leaders each follower's log end, lag and last fetch; on followers
the node they fetch from; and each node's replica fetchers. A node reports only
the replicas it holds: ask every node for the whole cluster. A node that does
not answer is reported on stderr and makes the exit code 1, after the others
are printed.`,
		Example: `  shale replication status --admin 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646
  shale replication status --admin 127.0.0.1:9644 --under-replicated --max-lag 100 --output json`,
		Args: noArgs,
	}
	f := status.Flags()
	admins := addAdmin(status, "admin HTTP address of a node (host:port or URL); repeatable or comma-separated")
	topic := f.String("topic", "", "only this topic")
	under := f.Bool("under-replicated", false, "only partitions whose ISR is smaller than the replica set, or with a follower more than --max-lag records behind (or not heard from) on its leader")
	maxLag := f.Int64("max-lag", 0, "with --under-replicated: the follower lag in records still counted as in step")
	output := addOutput(status)
	hiddenAlias(f, jsonAlias{output}, "json", "output json")
	timeout := f.Duration("timeout", defaultTimeout, "request timeout per node")
	status.RunE = func(cmd *cobra.Command, _ []string) error {
		if *maxLag < 0 {
			return usagef("--max-lag must not be negative")
		}
		client, addrs, err := admins.client(*timeout)
		if err != nil {
			return err
		}
		return replicationStatus(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), client, addrs, *topic, *under, *maxLag, output.json())
	}
	return newGroup("replication", "replication status of the nodes' replicas", status)
}

// errSomeNodes is returned when a node did not answer; the others' status
// was printed.
var errSomeNodes = errors.New("some nodes did not answer")

func replicationStatus(ctx context.Context, stdout, stderr io.Writer, client adminapi.Client, addrs []string, topic string, under bool,
	maxLag int64, asJSON bool) error {
	sts := make([]adminapi.ReplicationStatus, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { sts[i], errs[i] = client.ReplicationStatus(ctx, a, topic) })
	}
	wg.Wait()
	var failed error
	var got []adminapi.ReplicationStatus
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "shale replication status: %s: %v\n", addrs[i], err)
			failed = errSomeNodes
			continue
		}
		got = append(got, filterReplicationStatus(sts[i], topic, under, maxLag))
	}
	if asJSON {
		if got == nil {
			got = []adminapi.ReplicationStatus{}
		}
		if err := writeJSON(stdout, got); err != nil {
			return err
		}
		return failed
	}
	if len(got) > 0 {
		writeReplicationStatus(stdout, got)
	}
	return failed
}

// filterReplicationStatus keeps the partitions of topic (all for "") and,
// with under, only those that are under-replicated or lagging by more than
// maxLag; the fetchers are kept when they hold a partition of topic, and
// dropped with under (they are no partition's health).
func filterReplicationStatus(st adminapi.ReplicationStatus, topic string, under bool, maxLag int64) adminapi.ReplicationStatus {
	out := adminapi.ReplicationStatus{NodeID: st.NodeID, Partitions: []adminapi.PartitionReplicationStatus{},
		Fetchers: []adminapi.FetcherReplicationStatus{}}
	for _, p := range st.Partitions {
		if (topic == "" || p.Topic == topic) && (!under || p.UnderReplicatedOrLagging(maxLag)) {
			out.Partitions = append(out.Partitions, p)
		}
	}
	if under {
		return out
	}
	for _, f := range st.Fetchers {
		if topic == "" || fetcherHoldsTopic(f, topic) {
			out.Fetchers = append(out.Fetchers, f)
		}
	}
	return out
}

// fetcherHoldsTopic reports whether one of f's "topic-partition" names is
// of topic: the name minus "topic-" must be a partition number.
func fetcherHoldsTopic(f adminapi.FetcherReplicationStatus, topic string) bool {
	for _, p := range f.Partitions {
		rest, ok := strings.CutPrefix(p, topic+"-")
		if ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// writeReplicationStatus prints three tables: the replicas, the followers
// as their leaders see them, and the replica fetchers (sections with no
// rows are left out).
func writeReplicationStatus(w io.Writer, sts []adminapi.ReplicationStatus) {
	t := newTable(w, "NODE", "TOPIC", "PARTITION", "ROLE", "EPOCH", "LEADER", "LOG-START", "LOG-END", "HIGH-WATERMARK",
		"REPLICAS", "ISR", "UNDER-REPLICATED", "FETCHING-FROM")
	followers, fetchers := false, false
	for _, st := range sts {
		for _, p := range st.Partitions {
			from := "-"
			if p.Role == adminapi.RoleFollower {
				from = orNone(p.FetchingFrom)
			}
			t.row(st.NodeID, p.Topic, p.Partition, p.Role, p.LeaderEpoch, orNone(p.Leader), p.LogStartOffset, p.LogEndOffset,
				p.HighWatermark, int32List(p.Replicas), int32List(p.ISR), p.UnderReplicated, from)
			followers = followers || len(p.Followers) > 0
		}
		fetchers = fetchers || len(st.Fetchers) > 0
	}
	t.flush()
	if followers {
		fmt.Fprintln(w)
		t = newTable(w, "LEADER", "TOPIC", "PARTITION", "FOLLOWER", "LOG-END", "LAG", "IN-ISR", "LAST-FETCH", "LAST-CAUGHT-UP")
		for _, st := range sts {
			for _, p := range st.Partitions {
				for _, f := range p.Followers {
					leo, lag := "-", "-"
					if f.LogEndOffset >= 0 {
						leo, lag = fmt.Sprint(f.LogEndOffset), fmt.Sprint(f.LagRecords)
					}
					t.row(st.NodeID, p.Topic, p.Partition, f.ID, leo, lag, f.InISR, ago(f.LastFetchMsAgo), ago(f.LastCaughtUpMsAgo))
				}
			}
		}
		t.flush()
	}
	if fetchers {
		fmt.Fprintln(w)
		t = newTable(w, "NODE", "SOURCE", "FETCHER", "PARTITIONS", "FETCHES", "MAX-WAIT-MS", "MIN-BYTES", "MAX-BYTES", "PARTITION-MAX-BYTES")
		for _, st := range sts {
			for _, f := range st.Fetchers {
				t.row(st.NodeID, f.Leader, f.Index, strings.Join(f.Partitions, ","), f.Fetches, f.MaxWaitMs, f.MinBytes,
					f.MaxBytes, f.PartitionMaxBytes)
			}
		}
		t.flush()
		for _, st := range sts {
			for _, f := range st.Fetchers {
				if f.Error != "" {
					fmt.Fprintf(w, "node %d fetcher %d from node %d failing (%d in a row): %s\n", st.NodeID, f.Index, f.Leader,
						f.ConsecutiveFailures, f.Error)
				}
			}
		}
	}
}

// orNone prints a node id, or "none" for -1.
func orNone(id int32) string {
	if id < 0 {
		return "none"
	}
	return fmt.Sprint(id)
}

// ago prints milliseconds ago as "1.234s ago", or "never" for -1.
func ago(ms int64) string {
	if ms < 0 {
		return "never"
	}
	return (time.Duration(ms) * time.Millisecond).String() + " ago"
}
