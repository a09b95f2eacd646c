package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/sdk"
)

// errGroupActive is returned when offsets of a group with live members
// would be reset: its members would overwrite the new offsets.
var errGroupActive = errors.New("group has active members")

func newGroupCmd() *cobra.Command {
	return newGroup("group", "consumer groups: list, describe with lag, reset offsets, group configs",
		newGroupListCmd(), newGroupDescribeCmd(), newGroupResetOffsetsCmd(), newGroupConfigCmd())
}

// groupListEntry is one row of `shale group list`.
type groupListEntry struct {
	Group        string `json:"group"`
	Type         string `json:"type"` // classic, consumer (KIP-848) or share (KIP-932); ListGroups v5
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func newGroupListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list consumer groups", Args: noArgs}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return groupList(cmd.Context(), g, cmd.OutOrStdout()) }
	return cmd
}

func groupList(ctx context.Context, g *cliGlobals, stdout io.Writer) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	adm := a.Kadm()
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	entries := []groupListEntry{}
	for _, lg := range groups.Sorted() {
		entries = append(entries, groupListEntry{Group: lg.Group, Type: lg.GroupType, State: lg.State, ProtocolType: lg.ProtocolType, Coordinator: lg.Coordinator})
	}
	if g.json() {
		return writeJSON(stdout, entries)
	}
	t := newTable(stdout, "GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
	for _, e := range entries {
		t.row(e.Group, e.Type, e.State, e.ProtocolType, e.Coordinator)
	}
	return t.flush()
}

// groupDescription is one group in `shale group describe`.
type groupDescription struct {
	Group string `json:"group"`
	// GroupProtocol is the group protocol: classic (JoinGroup/SyncGroup),
	// consumer (KIP-848, with the epochs below) or share (KIP-932: the
	// partitions' CurrentOffset is the share-partition start offset and
	// Lag the records not yet acknowledged or archived).
	GroupProtocol   string         `json:"group_protocol"`
	GroupEpoch      int32          `json:"group_epoch,omitempty"`
	AssignmentEpoch int32          `json:"assignment_epoch,omitempty"`
	State           string         `json:"state"`
	ProtocolType    string         `json:"protocol_type"`
	Protocol        string         `json:"protocol"`
	Coordinator     int32          `json:"coordinator"`
	Members         []groupMember  `json:"members"`
	TotalLag        int64          `json:"total_lag"`
	Partitions      []partitionLag `json:"partitions"`
	Error           string         `json:"error,omitempty"`
	// InFlightError says why a share group's in-flight counts are not
	// known: no node behind --admin answered.
	InFlightError string `json:"in_flight_error,omitempty"`
}

type groupMember struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	// MemberEpoch, Assigned and Target are a KIP-848 member's epoch, the
	// partitions it owns and those the target assignment gives it.
	MemberEpoch *int32             `json:"member_epoch,omitempty"`
	Assigned    map[string][]int32 `json:"assigned,omitempty"`
	Target      map[string][]int32 `json:"target,omitempty"`
}

// partitionLag is a group's committed offset and lag in one partition; a
// CurrentOffset of -1 means nothing is committed, and Lag is then the whole
// retained log.
type partitionLag struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	LogEndOffset  int64  `json:"log_end_offset"`
	Lag           int64  `json:"lag"`
	MemberID      string `json:"member_id,omitempty"`
	Error         string `json:"error,omitempty"`
	// InFlight, Acquired and Available are a share-partition's records in
	// flight on its leader (adminapi.SharePartition), absent when no node
	// behind --admin leads it.
	InFlight  *int `json:"in_flight,omitempty"`
	Acquired  *int `json:"acquired,omitempty"`
	Available *int `json:"available,omitempty"`
}

func newGroupDescribeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "a group's state, members, committed offsets and lag",
		Long: `A group's state, members, committed offsets and lag. For a KIP-932 share
group, CURRENT-OFFSET is each share-partition's start offset and LAG its
records not yet acknowledged or archived (DescribeShareGroupOffsets), and
IN-FLIGHT, ACQUIRED and AVAILABLE its records in flight, which no Kafka API
reports: they come from the admin HTTP API of the partitions' leaders, so
give --admin every node's admin address (a partition whose leader is not
among them shows "-").`,
		Example: "  shale group describe orders\n  shale group describe jobs --admin 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646",
		Args:    minArgs(1, "name a group"),
	}
	g := addGlobals(cmd)
	admin := addAdmin(cmd, "admin HTTP addresses of the nodes, for a share group's in-flight counts")
	cmd.ValidArgsFunction = completeGroups(g)
	cmd.RunE = func(cmd *cobra.Command, groups []string) error {
		return groupDescribe(cmd.Context(), g, admin, cmd.OutOrStdout(), groups)
	}
	return cmd
}

func groupDescribe(ctx context.Context, g *cliGlobals, admin *adminAddrs, stdout io.Writer, groups []string) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	out := []groupDescription{}
	var missing []string
	for _, name := range groups {
		info, lags, err := a.DescribeGroupLag(ctx, name)
		switch {
		case errors.Is(err, sdk.ErrGroupNotFound):
			// Not a classic or consumer group: a KIP-932 share group?
			d, ok, serr := describeShareGroup(ctx, a.Kadm(), name)
			switch {
			case serr != nil:
				return serr
			case ok:
				if err := addInFlight(ctx, admin, g.timeout, &d); err != nil {
					return err
				}
				out = append(out, d)
			default:
				missing = append(missing, name)
			}
		case err != nil:
			return err
		default:
			d := describeLag(info, lags)
			if info.ProtocolType == "consumer" {
				addConsumerProtocol(ctx, a.Kadm(), &d)
			}
			out = append(out, d)
		}
	}
	if err := printGroupDescriptions(stdout, out, g.json()); err != nil {
		return err
	}
	if len(missing) > 0 {
		// As kafka-consumer-groups.sh: "Consumer group 'x' does not exist."
		return fmt.Errorf("%w: %s", errGroupNotFound, strings.Join(missing, ", "))
	}
	return nil
}

// errGroupNotFound is returned, after the groups that exist are printed,
// when a described group does not exist (Kafka answers it as Dead).
var errGroupNotFound = errors.New("no such consumer group")

func printGroupDescriptions(stdout io.Writer, out []groupDescription, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, out)
	}
	for i, d := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := printGroupDescription(stdout, d); err != nil {
			return err
		}
	}
	return nil
}

func describeLag(info sdk.GroupInfo, lags []sdk.PartitionLag) groupDescription {
	d := groupDescription{Group: info.Group, GroupProtocol: "classic", State: info.State, ProtocolType: info.ProtocolType, Protocol: info.Protocol,
		Coordinator: info.Coordinator, Members: []groupMember{}, Partitions: []partitionLag{}}
	for _, m := range info.Members {
		d.Members = append(d.Members, groupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost})
	}
	for _, l := range lags {
		pl := partitionLag{Topic: l.Topic, Partition: l.Partition, CurrentOffset: l.Committed, LogEndOffset: l.End, Lag: l.Lag, MemberID: l.MemberID}
		if l.Err != nil {
			pl.Error = l.Err.Error()
		}
		if pl.Lag > 0 {
			d.TotalLag += pl.Lag
		}
		d.Partitions = append(d.Partitions, pl)
	}
	return d
}

func printGroupDescription(w io.Writer, d groupDescription) error {
	t := newTable(w, "GROUP", d.Group)
	t.row("COORDINATOR", d.Coordinator)
	t.row("STATE", d.State)
	t.row("GROUP-PROTOCOL", d.GroupProtocol)
	if d.GroupProtocol == "consumer" || d.GroupProtocol == "share" {
		t.row("GROUP-EPOCH", d.GroupEpoch)
		t.row("ASSIGNMENT-EPOCH", d.AssignmentEpoch)
	}
	t.row("PROTOCOL", strings.Trim(d.ProtocolType+"/"+d.Protocol, "/"))
	t.row("MEMBERS", len(d.Members))
	t.row("TOTAL-LAG", d.TotalLag)
	if d.Error != "" {
		t.row("ERROR", d.Error)
	}
	if d.InFlightError != "" {
		t.row("IN-FLIGHT", "unknown: "+d.InFlightError)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(d.Members) > 0 && (d.GroupProtocol == "consumer" || d.GroupProtocol == "share") {
		fmt.Fprintln(w)
		t = newTable(w, "MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "MEMBER-EPOCH", "ASSIGNED", "TARGET")
		for _, m := range d.Members {
			epoch := ""
			if m.MemberEpoch != nil {
				epoch = fmt.Sprint(*m.MemberEpoch)
			}
			t.row(m.MemberID, m.InstanceID, m.ClientID, m.Host, epoch, partitionsText(m.Assigned), partitionsText(m.Target))
		}
		if err := t.flush(); err != nil {
			return err
		}
	} else if len(d.Members) > 0 {
		fmt.Fprintln(w)
		t = newTable(w, "MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST")
		for _, m := range d.Members {
			t.row(m.MemberID, m.InstanceID, m.ClientID, m.Host)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if d.GroupProtocol == "share" {
		t = newTable(w, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "IN-FLIGHT", "ACQUIRED", "AVAILABLE", "ERROR")
		for _, p := range d.Partitions {
			t.row(p.Topic, p.Partition, offsetText(p.CurrentOffset), p.LogEndOffset, p.Lag, countText(p.InFlight), countText(p.Acquired), countText(p.Available), p.Error)
		}
		return t.flush()
	}
	t = newTable(w, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "ERROR")
	for _, p := range d.Partitions {
		t.row(p.Topic, p.Partition, offsetText(p.CurrentOffset), p.LogEndOffset, p.Lag, p.MemberID, p.Error)
	}
	return t.flush()
}

// countText prints an unknown count as "-".
func countText(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

// offsetText prints -1 (nothing committed) as "-".
func offsetText(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}

// addConsumerProtocol fills in what ConsumerGroupDescribe says of a KIP-848
// group: its epochs and its members' epochs and assignments. A classic
// group (GROUP_ID_NOT_FOUND there) is left as it is.
func addConsumerProtocol(ctx context.Context, adm *kadm.Client, d *groupDescription) {
	described, err := adm.DescribeConsumerGroups(ctx, d.Group)
	if err != nil {
		return
	}
	cg, ok := described[d.Group]
	if !ok || cg.Err != nil {
		return
	}
	d.GroupProtocol, d.GroupEpoch, d.AssignmentEpoch = "consumer", cg.Epoch, cg.AssignmentEpoch
	byID := map[string]kadm.ConsumerGroupMember{}
	for _, m := range cg.Members {
		byID[m.MemberID] = m
	}
	for i, m := range d.Members {
		cm, ok := byID[m.MemberID]
		if !ok {
			continue
		}
		epoch := cm.MemberEpoch
		d.Members[i].MemberEpoch = &epoch
		d.Members[i].Assigned, d.Members[i].Target = topicsSetMap(cm.Assignment), topicsSetMap(cm.TargetAssignment)
	}
}

func topicsSetMap(s kadm.TopicsSet) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range s {
		for p := range ps {
			out[t] = append(out[t], p)
		}
		slices.Sort(out[t])
	}
	return out
}

// partitionsText prints an assignment as topic:0,1 topic2:3.
func partitionsText(a map[string][]int32) string {
	topics := slices.Sorted(maps.Keys(a))
	parts := make([]string, 0, len(topics))
	for _, t := range topics {
		ps := make([]string, len(a[t]))
		for i, p := range a[t] {
			ps[i] = fmt.Sprint(p)
		}
		parts = append(parts, t+":"+strings.Join(ps, ","))
	}
	return strings.Join(parts, " ")
}
