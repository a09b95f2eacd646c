package sdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupInfo describes a consumer group.
type GroupInfo struct {
	Group        string
	State        string // Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
	ProtocolType string // "consumer" for Kafka consumer groups
	Protocol     string // the assignor, e.g. cooperative-sticky
	Coordinator  int32
	Members      []GroupMember
}

// GroupMember is one member of a group and the partitions it owns.
type GroupMember struct {
	MemberID   string
	InstanceID string // group.instance.id of a static member, else ""
	ClientID   string
	ClientHost string
	Assigned   map[string][]int32
}

// GroupLag is a group's committed offset on one partition against the
// partition's end.
type GroupLag struct {
	Committed int64 // -1 when nothing is committed
	End       int64
	Lag       int64 // End - Committed, or End - start when nothing is committed
}

// groupErr wraps err with the SDK's group sentinels.
func groupErr(group string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("%w: %s: %w", ErrGroupNotFound, group, err)
	case errors.Is(err, kerr.NonEmptyGroup), errors.Is(err, kerr.UnknownMemberID):
		return fmt.Errorf("%w: %s: %w", ErrGroupNotEmpty, group, err)
	default:
		return fmt.Errorf("sdk: group %s: %w", group, err)
	}
}

// ListGroups returns the consumer groups' names, sorted.
func (a *Admin) ListGroups(ctx context.Context) ([]string, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	lg, err := a.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("sdk: list groups: %w", err)
	}
	return lg.Groups(), nil
}

// DescribeGroup returns group's state and members. A group the coordinator
// does not know is ErrGroupNotFound (Kafka answers such a group as Dead).
func (a *Admin) DescribeGroup(ctx context.Context, group string) (GroupInfo, error) {
	if a.closed.Load() {
		return GroupInfo{}, ErrClosed
	}
	dg, err := a.adm.DescribeGroups(ctx, group)
	if err != nil {
		return GroupInfo{}, groupErr(group, err)
	}
	d, ok := dg[group]
	if !ok {
		return GroupInfo{}, groupErr(group, kerr.GroupIDNotFound)
	}
	if d.Err != nil {
		return GroupInfo{}, groupErr(group, d.Err)
	}
	if d.State == "Dead" {
		return GroupInfo{}, groupErr(group, kerr.GroupIDNotFound)
	}
	return groupInfo(d), nil
}

// groupInfo converts kadm's description of a group.
func groupInfo(d kadm.DescribedGroup) GroupInfo {
	info := GroupInfo{Group: d.Group, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol, Coordinator: d.Coordinator.NodeID}
	for _, m := range d.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: map[string][]int32{}}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				gm.Assigned[t.Topic] = slices.Sorted(slices.Values(t.Partitions))
			}
		}
		info.Members = append(info.Members, gm)
	}
	return info
}

// PartitionLag is a group's committed offset and lag in one partition.
type PartitionLag struct {
	Topic     string
	Partition int32
	Committed int64  // -1 when nothing is committed
	End       int64  // the partition's end (high watermark)
	Lag       int64  // End - Committed, or End - log start when nothing is committed
	MemberID  string // the member the partition is assigned to, "" for none
	Err       error  // why the partition's offsets could not be read, else nil
}

// DescribeGroupLag returns group's state and members, as DescribeGroup, and
// its lag on every partition it has committed offsets in or a member is
// assigned, sorted by topic and partition; internal topics
// (__consumer_offsets) are left out. A partition whose end cannot be
// listed has its Err set; a group that cannot be described or whose
// offsets cannot be fetched is an error.
func (a *Admin) DescribeGroupLag(ctx context.Context, group string) (GroupInfo, []PartitionLag, error) {
	if a.closed.Load() {
		return GroupInfo{}, nil, ErrClosed
	}
	lags, err := a.adm.Lag(ctx, group)
	if err != nil {
		return GroupInfo{}, nil, groupErr(group, err)
	}
	l, ok := lags[group]
	if !ok {
		return GroupInfo{}, nil, groupErr(group, kerr.GroupIDNotFound)
	}
	if err := l.Error(); err != nil {
		return GroupInfo{}, nil, groupErr(group, err)
	}
	if l.State == "Dead" {
		return GroupInfo{}, nil, groupErr(group, kerr.GroupIDNotFound)
	}
	info := groupInfo(kadm.DescribedGroup{Group: l.Group, State: l.State, ProtocolType: l.ProtocolType,
		Protocol: l.Protocol, Coordinator: l.Coordinator, Members: l.Members})
	parts := []PartitionLag{}
	for _, ml := range l.Lag.Sorted() {
		if strings.HasPrefix(ml.Topic, "__") {
			continue
		}
		pl := PartitionLag{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag, Err: ml.Err}
		if ml.Member != nil {
			pl.MemberID = ml.Member.MemberID
		}
		parts = append(parts, pl)
	}
	return info, parts, nil
}

// DeleteGroup deletes group and its committed offsets; the group must have
// no members (ErrGroupNotEmpty).
func (a *Admin) DeleteGroup(ctx context.Context, group string) error {
	if a.closed.Load() {
		return ErrClosed
	}
	r, err := a.adm.DeleteGroup(ctx, group)
	if err == nil {
		err = r.Err
	}
	return groupErr(group, err)
}

// CommittedOffsets returns group's committed offsets, by topic and
// partition.
func (a *Admin) CommittedOffsets(ctx context.Context, group string) (map[string]map[int32]int64, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	resp, err := a.adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, groupErr(group, err)
	}
	out := map[string]map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.At
	})
	return out, nil
}

// GroupLag returns, for every partition of topic, group's committed offset
// and how far it is behind the end.
func (a *Admin) GroupLag(ctx context.Context, group, topic string) (map[int32]GroupLag, error) {
	committed, err := a.CommittedOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	ends, err := resolve(ctx, a.adm, topic, End())
	if err != nil {
		return nil, err
	}
	starts, err := resolve(ctx, a.adm, topic, Start())
	if err != nil {
		return nil, err
	}
	out := map[int32]GroupLag{}
	for p, end := range ends {
		c, ok := committed[topic][p]
		l := GroupLag{Committed: -1, End: end, Lag: end - starts[p]}
		if ok && c >= 0 {
			l.Committed, l.Lag = c, max(end-c, 0)
		}
		out[p] = l
	}
	return out, nil
}

// OffsetReset is one partition's move in a reset of a group's offsets.
type OffsetReset struct {
	Topic     string
	Partition int32
	Old       int64 // the committed offset before the reset, -1 when none
	New       int64
	End       int64 // the partition's end (high watermark)
	Lag       int64 // End - New
}

// PlanOffsetReset computes, without committing anything, where a reset of
// group's offsets to pos would move them: pos resolved (as ResolveOffsets)
// on the named partitions of each of topics, or on every partition when
// none is named, sorted by topic and partition. It does not look at the
// group's members: CommitOffsetReset does.
func (a *Admin) PlanOffsetReset(ctx context.Context, group string, pos Position, topics []string, partitions ...int32) ([]OffsetReset, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	committed, err := a.CommittedOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	return a.planReset(ctx, pos, topics, partitions, func(topic string, _ []int32) (map[int32]int64, error) {
		return committed[topic], nil
	})
}

// planReset is the plan of a reset to pos of the named partitions of each
// of topics, or of every partition when none is named, sorted by topic
// and partition; old(topic, partitions) is where the group is on them now
// (a partition left out, or negative: nowhere, Old -1).
func (a *Admin) planReset(ctx context.Context, pos Position, topics []string, partitions []int32,
	old func(topic string, partitions []int32) (map[int32]int64, error)) ([]OffsetReset, error) {
	plan := []OffsetReset{}
	for _, topic := range slices.Sorted(slices.Values(topics)) {
		ranges, err := offsetRanges(ctx, a.adm, topic, partitions)
		if err != nil {
			return nil, err
		}
		next, err := resolveIn(ctx, a.adm, topic, pos, ranges)
		if err != nil {
			return nil, err
		}
		parts := slices.Sorted(maps.Keys(next))
		at, err := old(topic, parts)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			r := OffsetReset{Topic: topic, Partition: p, Old: -1, New: next[p], End: ranges[p].End}
			if o, ok := at[p]; ok && o >= 0 {
				r.Old = o
			}
			r.Lag = max(r.End-r.New, 0)
			plan = append(plan, r)
		}
	}
	return plan, nil
}

// CommitOffsetReset commits plan's New offsets for group, as
// kafka-consumer-groups --reset-offsets --execute does. The group must
// have no members: a live member would overwrite the reset with its own
// commits (ErrGroupNotEmpty).
func (a *Admin) CommitOffsetReset(ctx context.Context, group string, plan []OffsetReset) error {
	if a.closed.Load() {
		return ErrClosed
	}
	if err := a.requireEmptyGroup(ctx, group); err != nil {
		return err
	}
	var os kadm.Offsets
	for _, r := range plan {
		os.AddOffset(r.Topic, r.Partition, r.New, -1)
	}
	if err := a.adm.CommitAllOffsets(ctx, group, os); err != nil {
		return groupErr(group, err)
	}
	return nil
}

// requireEmptyGroup is ErrGroupNotEmpty when group has members; a group
// the coordinator does not know is empty.
func (a *Admin) requireEmptyGroup(ctx context.Context, group string) error {
	dg, err := a.DescribeGroup(ctx, group)
	switch {
	case errors.Is(err, ErrGroupNotFound):
		return nil
	case err != nil:
		return err
	case len(dg.Members) > 0:
		return fmt.Errorf("%w: %s is %s with %d members", ErrGroupNotEmpty, group, dg.State, len(dg.Members))
	}
	return nil
}

// ResetGroupOffsets commits, for group, pos resolved on every partition of
// topic (Start, End, an offset, n before the end, or a time), as
// kafka-consumer-groups --reset-offsets does: PlanOffsetReset, then
// CommitOffsetReset. The group must have no members (ErrGroupNotEmpty).
// It returns the offsets committed.
func (a *Admin) ResetGroupOffsets(ctx context.Context, group, topic string, pos Position) (map[int32]int64, error) {
	plan, err := a.PlanOffsetReset(ctx, group, pos, []string{topic})
	if err != nil {
		return nil, err
	}
	if err := a.CommitOffsetReset(ctx, group, plan); err != nil {
		return nil, err
	}
	offs := make(map[int32]int64, len(plan))
	for _, r := range plan {
		offs[r.Partition] = r.New
	}
	return offs, nil
}
