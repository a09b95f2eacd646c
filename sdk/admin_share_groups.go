package sdk

// KIP-932 share groups: a share group has no committed offsets; each
// share-partition has a start offset (every record below it acknowledged
// or archived), which DescribeShareGroupOffsets reads and
// AlterShareGroupOffsets moves while the group has no members.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupInfo describes a KIP-932 share group (ShareGroupDescribe).
type ShareGroupInfo struct {
	Group       string
	State       string // Empty, Stable, Dead
	Coordinator int32
	Members     int
}

// DescribeShareGroup describes group as a share group: ErrGroupNotFound
// when the cluster has no share group of that name (also when group is a
// classic or consumer group).
func (a *Admin) DescribeShareGroup(ctx context.Context, group string) (ShareGroupInfo, error) {
	if a.closed.Load() {
		return ShareGroupInfo{}, ErrClosed
	}
	dgs, err := a.adm.DescribeShareGroups(ctx, group)
	d, ok := dgs[group]
	if !ok {
		if err == nil {
			err = kerr.GroupIDNotFound
		}
		return ShareGroupInfo{}, groupErr(group, err)
	}
	if d.Err != nil {
		return ShareGroupInfo{}, groupErr(group, d.Err)
	}
	if d.GroupState == "Dead" {
		return ShareGroupInfo{}, groupErr(group, kerr.GroupIDNotFound)
	}
	return ShareGroupInfo{Group: group, State: d.GroupState, Coordinator: d.Coordinator.NodeID, Members: len(d.Members)}, nil
}

// ShareStartOffsets returns group's share-partition start offsets on the
// named partitions of topic (DescribeShareGroupOffsets): -1 where a
// share-partition has no state yet (it starts at share.auto.offset.reset
// on its first fetch).
func (a *Admin) ShareStartOffsets(ctx context.Context, group, topic string, partitions []int32) (map[int32]int64, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, partitions
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, groupErr(group, err)
	}
	out := map[int32]int64{}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, groupErr(group, err)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("sdk: share group %s: %s-%d: %w", group, topic, p.Partition, err)
				}
				out[p.Partition] = p.StartOffset
			}
		}
	}
	return out, nil
}

// PlanShareOffsetReset is PlanOffsetReset for a share group: where a
// reset of group's share-partition start offsets to pos would move them,
// Old being each one's start offset now (-1 when it has none). It looks
// neither at the group's members nor at its type: CommitShareOffsetReset
// does.
func (a *Admin) PlanShareOffsetReset(ctx context.Context, group string, pos Position, topics []string, partitions ...int32) ([]OffsetReset, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	return a.planReset(ctx, pos, topics, partitions, func(topic string, parts []int32) (map[int32]int64, error) {
		return a.ShareStartOffsets(ctx, group, topic, parts)
	})
}

// CommitShareOffsetReset moves plan's share-partitions of share group to
// their New start offsets (AlterShareGroupOffsets), as
// kafka-share-groups --reset-offsets --execute does. The group must have
// no members (ErrGroupNotEmpty, naming its state; the broker refuses too,
// NON_EMPTY_GROUP). A partition the broker refuses is an error naming it.
func (a *Admin) CommitShareOffsetReset(ctx context.Context, group string, plan []OffsetReset) error {
	if a.closed.Load() {
		return ErrClosed
	}
	g, err := a.DescribeShareGroup(ctx, group)
	if err != nil && !errors.Is(err, ErrGroupNotFound) {
		return err
	}
	if g.Members > 0 {
		return fmt.Errorf("%w: %s is %s with %d members", ErrGroupNotEmpty, group, g.State, g.Members)
	}
	var os kadm.Offsets
	for _, r := range plan {
		os.AddOffset(r.Topic, r.Partition, r.New, -1)
	}
	res, err := a.adm.AlterShareGroupOffsets(ctx, group, os)
	if err != nil {
		return groupErr(group, err)
	}
	var errs []error
	for _, r := range plan {
		if perr, ok := res.Lookup(r.Topic, r.Partition); !ok {
			errs = append(errs, fmt.Errorf("%s-%d: not answered", r.Topic, r.Partition))
		} else if perr != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, perr))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sdk: share group %s: %w", group, errors.Join(errs...))
	}
	return nil
}
