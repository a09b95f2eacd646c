package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/shale-io/shale/adminapi"
)

const replicationUsage = "usage: shale replication status [--node ADMIN_ADDR ...] [--topic T] [--under-replicated [--max-lag N]] [--json | --output text|json]"

// replicationCmd runs `shale replication status`: each local replica of the
// nodes behind --node (their admin HTTP addresses, repeatable or
// comma-separated) with its role, leader epoch, offsets, replicas and ISR;
// on leaders each follower's log end, lag and last fetch; on followers the
// node they fetch from; and each node's replica fetchers. A node that does
// not answer is reported on stderr and makes the exit code 1, after the
// others are printed.
func replicationCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprintln(stderr, replicationUsage)
		return 2
	}
	fs := flag.NewFlagSet("shale replication status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nodes listFlag
	fs.Var(&nodes, "node", "a node's admin HTTP address (host:port or URL); repeatable or comma-separated (default 127.0.0.1:9644)")
	topic := fs.String("topic", "", "only this topic")
	under := fs.Bool("under-replicated", false, "only partitions whose ISR is smaller than the replica set, or with a follower more than --max-lag records behind (or not heard from) on its leader")
	maxLag := fs.Int64("max-lag", 0, "with --under-replicated: the follower lag in records still counted as in step")
	asJSON := fs.Bool("json", false, "print JSON (as --output json)")
	output := fs.String("output", "text", "text or json")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout per node")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || (*output != "text" && *output != "json") || *maxLag < 0 {
		fmt.Fprintln(stderr, replicationUsage)
		return 2
	}
	var addrs []string
	for _, n := range nodes {
		for _, a := range strings.Split(n, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:9644"}
	}

	client := adminapi.Client{Timeout: *timeout}
	sts := make([]adminapi.ReplicationStatus, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { sts[i], errs[i] = client.ReplicationStatus(context.Background(), a, *topic) })
	}
	wg.Wait()
	code := 0
	var got []adminapi.ReplicationStatus
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "shale replication status: %s: %v\n", addrs[i], err)
			code = 1
			continue
		}
		got = append(got, filterReplicationStatus(sts[i], *topic, *under, *maxLag))
	}
	if *asJSON || *output == "json" {
		if got == nil {
			got = []adminapi.ReplicationStatus{}
		}
		if err := writeJSON(stdout, got); err != nil {
			return 1
		}
		return code
	}
	if len(got) > 0 {
		writeReplicationStatus(stdout, got)
	}
	return code
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
