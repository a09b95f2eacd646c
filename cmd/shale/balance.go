package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/sdk"
)

// `shale broker decommission|recommission` and `shale cluster rebalance`:
// the controller's replica balancer (docs/node.md, "Replica balancer").
// Kafka has no API for draining a broker or for a balancer's plan, so
// these go to a node's admin HTTP API (adminapi.DecommissionPath,
// BalancePath); the moves `cluster rebalance` submits go over Kafka's
// AlterPartitionReassignments, as kafka-reassign-partitions sends them.

func parseBrokerIDs(args []string) ([]int32, error) {
	var ids []int32
	for _, a := range args {
		for f := range strings.SplitSeq(a, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || id < 0 {
				return nil, usagef("broker id %q: want a node id", f)
			}
			if slices.Contains(ids, int32(id)) {
				return nil, usagef("broker %d named twice", id)
			}
			ids = append(ids, int32(id))
		}
	}
	return ids, nil
}

func newBrokerDecommissionCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "decommission ID...", Short: "drain brokers: their leaderships, then their replicas, move to the others",
		Long: "Marks the brokers as draining in the control plane (the mark outlives restarts and controller changes). The " +
			"controller's balancer (balancer_enable) then moves their leaderships to other in-sync replicas, then their " +
			"replicas to the other brokers through KIP-455 reassignments, balancer_max_moves at a time, and gives them " +
			"nothing new. Once they host nothing they may be stopped and unregistered (shale broker unregister). A drain that " +
			"cannot finish (for example replication factor 3 on three brokers) is refused with the reason, and nothing " +
			"changes. With --wait it waits until the brokers host nothing and lead nothing.",
		Example: "shale broker decommission 4 5 6 --admin 127.0.0.1:9644 --wait", Args: minArgs(1, "name the broker ids")}
	admins := addAdmin(cmd, "admin HTTP address of a node (host:port or URL)")
	timeout := cmd.Flags().Duration("timeout", defaultTimeout, "request timeout")
	wait := cmd.Flags().Bool("wait", false, "wait until the brokers host no replica and lead no partition")
	waitTimeout := cmd.Flags().Duration("wait-timeout", 10*time.Minute, "with --wait: how long to wait")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		client, node, ids, err := changeDrain(cmd, args, admins, *timeout, "decommission", adminapi.Client.Decommission)
		if err != nil || !*wait {
			return err
		}
		return waitDrained(cmd.Context(), cmd.OutOrStdout(), client, node, ids, *waitTimeout)
	}
	return cmd
}

func newBrokerRecommissionCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "recommission ID...", Short: "stop draining brokers: the balancer may place replicas on them again",
		Long: "Removes the brokers from the draining set: moves already started finish, and the balancer treats the " +
			"brokers as hosts again (a broker that was emptied gets replicas back as the balancer evens the load).",
		Example: "shale broker recommission 4 --admin 127.0.0.1:9644", Args: minArgs(1, "name the broker ids")}
	admins := addAdmin(cmd, "admin HTTP address of a node (host:port or URL)")
	timeout := cmd.Flags().Duration("timeout", defaultTimeout, "request timeout")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		_, _, _, err := changeDrain(cmd, args, admins, *timeout, "recommission", adminapi.Client.Recommission)
		return err
	}
	return cmd
}

// changeDrain sends change (verb: decommission or recommission) of the
// broker ids in args to the first admin address and prints the draining
// set it answers; it returns the client, the node asked and the ids, for
// a wait.
func changeDrain(cmd *cobra.Command, args []string, admins *adminAddrs, timeout time.Duration, verb string,
	change func(adminapi.Client, context.Context, string, []int32) (adminapi.DrainState, error)) (adminapi.Client, string, []int32, error) {
	ids, err := parseBrokerIDs(args)
	if err != nil {
		return adminapi.Client{}, "", nil, err
	}
	client, addrs, err := admins.client(timeout)
	if err != nil {
		return adminapi.Client{}, "", nil, err
	}
	st, err := change(client, cmd.Context(), addrs[0], ids)
	if err != nil {
		return adminapi.Client{}, "", nil, drainErr(verb, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "draining: %v\n", st.Draining)
	return client, addrs[0], ids, nil
}

// drainErr words a refused drain change: the node's reason alone.
func drainErr(verb string, err error) error {
	msg := err.Error()
	for _, status := range []string{" 400 Bad Request: ", " 409 Conflict: "} {
		if i := strings.Index(msg, status); i >= 0 {
			return fmt.Errorf("%s refused: %s", verb, msg[i+len(status):])
		}
	}
	return err
}

// waitDrained polls the balance plan until ids host and lead nothing.
func waitDrained(ctx context.Context, stdout io.Writer, client adminapi.Client, node string, ids []int32, limit time.Duration) error {
	start := time.Now()
	deadline := start.Add(limit)
	last := ""
	for {
		plan, err := client.Balance(ctx, node, 0)
		if err == nil {
			left := 0
			var parts []string
			for _, b := range plan.Brokers {
				if slices.Contains(ids, b.Broker) {
					left += b.Replicas + b.Leaders
					parts = append(parts, fmt.Sprintf("broker %d: %d replicas, %d leaders", b.Broker, b.Replicas, b.Leaders))
				}
			}
			if s := strings.Join(parts, "; "); s != last {
				fmt.Fprintln(stdout, s)
				last = s
			}
			for _, why := range plan.Blocked {
				fmt.Fprintln(stdout, "blocked:", why)
			}
			if left == 0 && plan.InFlight == 0 {
				fmt.Fprintf(stdout, "drained in %.1fs: the brokers may be stopped and unregistered\n", time.Since(start).Seconds())
				return nil
			}
			if !plan.Enabled {
				return errors.New("the balancer is off on the node asked (balancer_enable): nothing drains the brokers")
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("brokers %v not drained after %v", ids, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func newClusterRebalanceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "rebalance [--dry-run]", Short: "print the balancer's plan (moves and bytes each copies), and run it",
		Long: "Asks a node for the plan the controller's balancer would run now: leaderships off draining brokers, replicas " +
			"off draining brokers, replicas from the most to the least loaded broker while they differ by more than " +
			"balancer_replica_skew, and reorders that spread preferred leaders; each with the bytes it would copy (the " +
			"partition's local log on the node asked: on a tiered topic the local tail, all a new replica fetches; ? when " +
			"unknown). With --dry-run it only prints. Otherwise it submits the plan's reassignments with Kafka's " +
			"AlterPartitionReassignments (leader moves are left to the controller), refusing while reassignments are in " +
			"progress: two plans at once would conflict. The controller runs the same plan by itself when balancer_enable is on.",
		Example: "shale cluster rebalance --dry-run --admin 127.0.0.1:9644\nshale cluster rebalance --admin 127.0.0.1:9644 --bootstrap 127.0.0.1:9092 --max-moves 8",
		Args:    noArgs}
	g := addGlobals(cmd)
	admins := addAdmin(cmd, "admin HTTP address of a node (host:port or URL)")
	dry := cmd.Flags().Bool("dry-run", false, "print the plan only")
	maxMoves := cmd.Flags().Int("max-moves", 0, "reassignments at once (default: the node's balancer_max_moves)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *maxMoves < 0 || *maxMoves > 1000 {
			return usagef("--max-moves %d: want 1..1000", *maxMoves)
		}
		client, addrs, err := admins.client(g.timeout)
		if err != nil {
			return err
		}
		plan, err := client.Balance(cmd.Context(), addrs[0], *maxMoves)
		if err != nil {
			return err
		}
		if g.json() {
			if err := writeJSON(cmd.OutOrStdout(), plan); err != nil {
				return err
			}
		} else if err := printBalancePlan(cmd.OutOrStdout(), plan); err != nil {
			return err
		}
		if *dry {
			return nil
		}
		return runBalancePlan(cmd.Context(), g, cmd.OutOrStdout(), plan)
	}
	return cmd
}

func printBalancePlan(w io.Writer, plan adminapi.BalancePlan) error {
	state := "on"
	if !plan.Enabled {
		state = "off"
	}
	fmt.Fprintf(w, "balancer %s; max moves %d, replica skew %d (now %d); draining %v; in flight %d, pending %d\n",
		state, plan.MaxMoves, plan.Skew, plan.ReplicaSkew, plan.Draining, plan.InFlight, plan.Pending)
	t := newTable(w, "BROKER", "RACK", "REPLICAS", "LEADERS", "PREFERRED", "STATE")
	for _, b := range plan.Brokers {
		rack, st := b.Rack, "host"
		if rack == "" {
			rack = "-"
		}
		switch {
		case b.Draining:
			st = "draining"
		case !b.Host:
			st = "shutting down"
		}
		t.row(b.Broker, rack, b.Replicas, b.Leaders, b.Preferred, st)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, why := range plan.Blocked {
		fmt.Fprintln(w, "blocked:", why)
	}
	if len(plan.Moves) == 0 {
		if plan.Balanced {
			fmt.Fprintln(w, "balanced: no move")
		} else {
			fmt.Fprintln(w, "no move to start now")
		}
		return nil
	}
	t = newTable(w, "KIND", "PARTITION", "FROM", "TO", "REPLICAS", "TARGET", "BYTES")
	var total int64
	for _, m := range plan.Moves {
		bytes, target := "?", "-"
		if m.Bytes >= 0 {
			bytes = strconv.FormatInt(m.Bytes, 10)
			total += m.Bytes
		}
		if len(m.Target) > 0 {
			target = fmt.Sprint(m.Target)
		}
		t.row(m.Kind, fmt.Sprintf("%s-%d", m.Topic, m.Partition), m.From, m.To, fmt.Sprint(m.Replicas), target, bytes)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d moves, %d bytes to copy (known sizes)\n", len(plan.Moves), total)
	return nil
}

// errReassignmentsInProgress: rebalance refused while moves are running.
var errReassignmentsInProgress = errors.New("reassignments in progress")

// runBalancePlan submits plan's reassignments (one per partition).
func runBalancePlan(ctx context.Context, g *cliGlobals, w io.Writer, plan adminapi.BalancePlan) error {
	if plan.InFlight > 0 {
		return fmt.Errorf("%w: %d; nothing submitted: wait for them (shale partition reassign --verify) or cancel them", errReassignmentsInProgress, plan.InFlight)
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	n := 0
	for _, m := range plan.Moves {
		if m.Kind == "leader" || len(m.Target) == 0 {
			continue
		}
		req.Assign(m.Topic, m.Partition, m.Target)
		n++
	}
	if n == 0 {
		fmt.Fprintln(w, "nothing to submit")
		return nil
	}
	return withAdmin(ctx, g, func(ctx context.Context, a *sdk.Admin) error {
		res, err := a.Kadm().AlterPartitionAssignments(ctx, req)
		if err != nil {
			return err
		}
		return printAssignResults(w, res, "submitted")
	})
}

// printAssignResults prints each partition's outcome; an error when any
// failed.
func printAssignResults(w io.Writer, res kadm.AlterPartitionAssignmentsResponses, ok string) error {
	t := newTable(w, "TOPIC", "PARTITION", "RESULT")
	failed := 0
	for _, r := range res.Sorted() {
		result := ok
		if r.Err != nil {
			failed++
			result = r.Err.Error()
			if r.ErrMessage != "" {
				result += ": " + r.ErrMessage
			}
		}
		t.row(r.Topic, r.Partition, result)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions failed", failed, len(res.Sorted()))
	}
	return nil
}
