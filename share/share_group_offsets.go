package share

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
)

// What the share group admin APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups) need of
// the coordinator: the group's state and its share-partitions' persisted
// state, read and written through the Persister (the share coordinators
// of each share-partition).

// offsetsWriteCheck is the group-level error code of a request that
// rewrites an empty share group's offsets (AlterShareGroupOffsets,
// DeleteShareGroupOffsets): GROUP_AUTHORIZATION_FAILED without op on the
// group, else groupCheck's.
func (c *Coordinator) offsetsWriteCheck(req *kafka.Request, op acl.Operation, id string) int16 {
	if !c.cfg.Authorizer.Authorize(req, op, acl.Group(id)) {
		return kerr.GroupAuthorizationFailed.Code
	}
	return c.groupCheck(id, true)
}

// groupCheck is 0 when id is a share group this node coordinates with no
// members, else the error code for an admin write to it.
func (c *Coordinator) groupCheck(id string, needEmpty bool) int16 {
	if code := c.ready(id); code != 0 {
		return code
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.mu.groups[id]
	switch {
	case g == nil:
		return kerr.GroupIDNotFound.Code
	case needEmpty && len(g.members) > 0:
		return kerr.NonEmptyGroup.Code
	}
	return 0
}

// groupTopics is every topic the group's members subscribed to.
func (c *Coordinator) groupTopics(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.mu.groups[id]; g != nil {
		return slices.Sorted(maps.Keys(g.topics))
	}
	return nil
}

func (c *Coordinator) persister() Persister {
	if c.parts == nil {
		return nil
	}
	return c.parts.persister
}

// resetPartition gives a share-partition a new state epoch and start
// offset (start < 0: start over at share.auto.offset.reset), nothing in
// flight. The partition leader's state of an older epoch is fenced at
// its next write and read again.
func (c *Coordinator) resetPartition(ctx context.Context, key StateKey, start int64) error {
	p := c.persister()
	if p == nil {
		return ErrStateUnavailable
	}
	cur, err := p.Load(ctx, key)
	if err != nil {
		return err
	}
	epoch := int32(1)
	if cur != nil {
		epoch = cur.StateEpoch + 1
	}
	return p.Save(ctx, key, Snapshot{StateEpoch: epoch, LeaderEpoch: -1, StartOffset: start})
}

// ListShareGroups implements group.ShareGroups.
func (c *Coordinator) ListShareGroups() []ShareGroupListing {
	var out []ShareGroupListing
	for _, gi := range c.Groups() {
		out = append(out, ShareGroupListing{ID: gi.ID, State: gi.State})
	}
	return out
}

// ShareGroupListing is one share group as ListGroups lists it.
type ShareGroupListing struct{ ID, State string }

// DeleteShareGroup deletes an empty share group: every share-partition
// of the topics its members subscribed to starts over (as
// DeleteShareGroupOffsets), then the group is forgotten.
func (c *Coordinator) DeleteShareGroup(id string) (existed, deleted bool, err error) {
	switch c.groupCheck(id, true) {
	case 0:
	case kerr.NonEmptyGroup.Code:
		return true, false, nil
	case kerr.CoordinatorLoadInProgress.Code:
		return false, false, coordinator.ErrLoadInProgress
	default:
		return false, false, nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	for _, name := range c.groupTopics(id) {
		meta, ok := c.cluster.Topic(name)
		if !ok {
			continue
		}
		for p := range meta.Partitions {
			if err := c.resetPartition(ctx, StateKey{Group: id, TopicID: meta.ID, Partition: p}, -1); err != nil {
				return true, false, err
			}
		}
	}
	return c.DeleteGroup(ctx, id)
}
