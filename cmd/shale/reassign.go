package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/sdk"
)

// `shale partition reassign` takes the JSON of Kafka's
// kafka-reassign-partitions --execute, --verify and --cancel, and sends
// AlterPartitionReassignments and ListPartitionReassignments (KIP-455).

// reassignmentFile is kafka-reassign-partitions' --reassignment-json-file.
type reassignmentFile struct {
	Version    int                 `json:"version"`
	Partitions []reassignmentEntry `json:"partitions"`
}

type reassignmentEntry struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// errBadReassignment: the file, or what it asks, is refused before
// anything is sent.
var errBadReassignment = errors.New("reassignment refused")

// maxReassignmentFileBytes bounds the file read.
const maxReassignmentFileBytes = 16 << 20

// parseReassignment reads and checks a reassignment file: version 1, at
// least one partition, no partition twice, no empty replica list, no
// broker twice in one, log dirs (if any) "any" and one per replica.
func parseReassignment(r io.Reader) (reassignmentFile, error) {
	var f reassignmentFile
	data, err := io.ReadAll(io.LimitReader(r, maxReassignmentFileBytes+1))
	if err != nil {
		return f, err
	}
	if len(data) > maxReassignmentFileBytes {
		return f, fmt.Errorf("%w: the file is over %d bytes", errBadReassignment, maxReassignmentFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%w: not a reassignment JSON file ({\"version\":1,\"partitions\":[{\"topic\":...,\"partition\":...,\"replicas\":[...]}]}): %v", errBadReassignment, err)
	}
	if f.Version != 1 {
		return f, fmt.Errorf("%w: version %d: want 1", errBadReassignment, f.Version)
	}
	if len(f.Partitions) == 0 {
		return f, fmt.Errorf("%w: no partition listed", errBadReassignment)
	}
	seen := map[string]bool{}
	for _, p := range f.Partitions {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		switch {
		case p.Topic == "" || p.Partition < 0:
			return f, fmt.Errorf("%w: partition %q: want a topic and a partition number", errBadReassignment, name)
		case seen[name]:
			return f, fmt.Errorf("%w: %s listed twice", errBadReassignment, name)
		case len(p.Replicas) == 0:
			return f, fmt.Errorf("%w: %s: empty replica list", errBadReassignment, name)
		case p.LogDirs != nil && len(p.LogDirs) != len(p.Replicas):
			return f, fmt.Errorf("%w: %s: %d log dirs for %d replicas", errBadReassignment, name, len(p.LogDirs), len(p.Replicas))
		}
		seen[name] = true
		for i, r := range p.Replicas {
			if r < 0 || slices.Contains(p.Replicas[:i], r) {
				return f, fmt.Errorf("%w: %s: broker %d listed twice or negative in %v", errBadReassignment, name, r, p.Replicas)
			}
		}
		for _, d := range p.LogDirs {
			if d != "any" {
				return f, fmt.Errorf("%w: %s: log dir %q: a node has one log dir; give \"any\"", errBadReassignment, name, d)
			}
		}
	}
	return f, nil
}

func newPartitionReassignCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "reassign --reassignment-json-file F [--verify|--cancel]",
		Short: "move partitions to other brokers (kafka-reassign-partitions' JSON)",
		Long: "Starts the reassignments in F, the JSON kafka-reassign-partitions takes ({\"version\":1,\"partitions\":" +
			"[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,2,3]}]}; log_dirs may only be \"any\"), with " +
			"AlterPartitionReassignments (KIP-455): new replicas catch up outside the ISR, join it by the leader's rule, and " +
			"removed ones delete their data only once the move completes. Before sending anything it checks the whole file: " +
			"every topic and partition exists, every broker is registered, no broker is twice in a list, no partition is " +
			"twice, and no listed partition is already being moved (by the balancer or another operator: two plans at once " +
			"conflict); any problem is reported and nothing moves. It prints the current assignment first, as JSON to " +
			"roll back with. --verify reports each partition as complete, in progress or not as asked (exit 1 unless all " +
			"are complete); --cancel reverts the reassignments in progress of the listed partitions.",
		Example: "shale partition reassign --reassignment-json-file move.json --bootstrap 127.0.0.1:9092\n" +
			"shale partition reassign --reassignment-json-file move.json --verify",
		Args: noArgs}
	g := addGlobals(cmd)
	file := cmd.Flags().String("reassignment-json-file", "", "the reassignment JSON (kafka-reassign-partitions' format)")
	verify := cmd.Flags().Bool("verify", false, "report whether the reassignments completed")
	cancel := cmd.Flags().Bool("cancel", false, "cancel the reassignments in progress of the listed partitions")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *file == "" {
			return usagef("--reassignment-json-file is required")
		}
		if *verify && *cancel {
			return usagef("give at most one of --verify and --cancel")
		}
		fh, err := os.Open(*file)
		if err != nil {
			return usagef("--reassignment-json-file: %v", err)
		}
		f, err := parseReassignment(fh)
		fh.Close()
		if err != nil {
			return err
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			switch {
			case *verify:
				return verifyReassignment(ctx, cmd.OutOrStdout(), a, f)
			case *cancel:
				req := kadm.AlterPartitionAssignmentsReq{}
				for _, p := range f.Partitions {
					req.CancelAssign(p.Topic, p.Partition)
				}
				res, err := a.Kadm().AlterPartitionAssignments(ctx, req)
				if err != nil {
					return err
				}
				return printAssignResults(cmd.OutOrStdout(), res, "cancelled")
			}
			return executeReassignment(ctx, cmd.OutOrStdout(), a, f)
		})
	}
	return cmd
}

// reassignmentState reads the current replicas of f's partitions (an
// error naming an unknown topic or partition) and the reassignments in
// progress among them.
func reassignmentState(ctx context.Context, a *sdk.Admin, f reassignmentFile) (map[string]map[int32][]int32, kadm.ListPartitionReassignmentsResponses, error) {
	var topics []string
	set := kadm.TopicsSet{}
	for _, p := range f.Partitions {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
		set.Add(p.Topic, p.Partition)
	}
	td, err := a.Kadm().ListTopics(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	cur := map[string]map[int32][]int32{}
	for _, p := range f.Partitions {
		d, ok := td[p.Topic]
		if !ok || d.Err != nil {
			return nil, nil, fmt.Errorf("%w: %w %q", errBadReassignment, errUnknownTopic, p.Topic)
		}
		pd, ok := d.Partitions[p.Partition]
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s has no partition %d", errBadReassignment, p.Topic, p.Partition)
		}
		if cur[p.Topic] == nil {
			cur[p.Topic] = map[int32][]int32{}
		}
		cur[p.Topic][p.Partition] = pd.Replicas
	}
	inProgress, err := a.Kadm().ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, nil, err
	}
	return cur, inProgress, nil
}

func executeReassignment(ctx context.Context, w io.Writer, a *sdk.Admin, f reassignmentFile) error {
	brokers, err := a.ListBrokers(ctx)
	if err != nil {
		return err
	}
	registered := func(id int32) bool {
		return slices.ContainsFunc(brokers, func(b sdk.RegisteredBroker) bool { return b.NodeID == id })
	}
	for _, p := range f.Partitions {
		for _, r := range p.Replicas {
			if !registered(r) {
				return fmt.Errorf("%w: %s-%d: broker %d is not registered (shale broker list); nothing moved", errBadReassignment, p.Topic, p.Partition, r)
			}
		}
	}
	cur, inProgress, err := reassignmentState(ctx, a, f)
	if err != nil {
		return err
	}
	for _, r := range inProgress.Sorted() {
		return fmt.Errorf("%w: %s-%d is being reassigned already (replicas %v, adding %v, removing %v), by the balancer or another "+
			"operator; wait for it or --cancel it; nothing moved", errBadReassignment, r.Topic, r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
	}
	rollback := reassignmentFile{Version: 1}
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range f.Partitions {
		rollback.Partitions = append(rollback.Partitions, reassignmentEntry{Topic: p.Topic, Partition: p.Partition, Replicas: cur[p.Topic][p.Partition]})
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	slices.SortFunc(rollback.Partitions, func(x, y reassignmentEntry) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	roll, _ := json.Marshal(rollback)
	fmt.Fprintf(w, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", roll)
	res, err := a.Kadm().AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	return printAssignResults(w, res, "started")
}

func verifyReassignment(ctx context.Context, w io.Writer, a *sdk.Admin, f reassignmentFile) error {
	cur, inProgress, err := reassignmentState(ctx, a, f)
	if err != nil {
		return err
	}
	t := newTable(w, "TOPIC", "PARTITION", "STATE", "REPLICAS")
	notDone := 0
	for _, p := range f.Partitions {
		state, replicas := "complete", cur[p.Topic][p.Partition]
		if r, ok := inProgress[p.Topic][p.Partition]; ok {
			state, replicas = fmt.Sprintf("in progress (adding %v, removing %v)", r.AddingReplicas, r.RemovingReplicas), r.Replicas
			notDone++
		} else if !slices.Equal(replicas, p.Replicas) {
			state = fmt.Sprintf("not as asked (%v)", p.Replicas)
			notDone++
		}
		t.row(p.Topic, p.Partition, state, fmt.Sprint(replicas))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if notDone > 0 {
		return fmt.Errorf("%d of %d partitions not reassigned yet", notDone, len(f.Partitions))
	}
	return nil
}
