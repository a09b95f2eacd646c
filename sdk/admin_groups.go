package sdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupInfo describes a consumer group.
type GroupInfo struct {
	Group       string
	State       string // Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
	Protocol    string // the assignor, e.g. cooperative-sticky
	Coordinator int32
	Members     []GroupMember
}

// GroupMember is one member of a group and the partitions it owns.
type GroupMember struct {
	MemberID   string
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
	info := GroupInfo{Group: d.Group, State: d.State, Protocol: d.Protocol, Coordinator: d.Coordinator.NodeID}
	for _, m := range d.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: map[string][]int32{}}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				gm.Assigned[t.Topic] = slices.Sorted(slices.Values(t.Partitions))
			}
		}
		info.Members = append(info.Members, gm)
	}
	return info, nil
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

// ResetGroupOffsets commits, for group, pos resolved on every partition of
// topic (Start, End, an offset, or a time), as kafka-consumer-groups
// --reset-offsets does. The group must have no members: a live member
// would overwrite the reset with its own commits (ErrGroupNotEmpty). It
// returns the offsets committed.
func (a *Admin) ResetGroupOffsets(ctx context.Context, group, topic string, pos Position) (map[int32]int64, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	dg, err := a.DescribeGroup(ctx, group)
	switch {
	case errors.Is(err, ErrGroupNotFound):
	case err != nil:
		return nil, err
	case len(dg.Members) > 0:
		return nil, fmt.Errorf("%w: %s has %d members", ErrGroupNotEmpty, group, len(dg.Members))
	}
	offs, err := resolve(ctx, a.adm, topic, pos)
	if err != nil {
		return nil, err
	}
	var os kadm.Offsets
	for _, p := range slices.Sorted(maps.Keys(offs)) {
		os.AddOffset(topic, p, offs[p], -1)
	}
	if err := a.adm.CommitAllOffsets(ctx, group, os); err != nil {
		return nil, groupErr(group, err)
	}
	return offs, nil
}
