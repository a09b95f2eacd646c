package share

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/coordinator"
)

// MembershipLog keeps share group membership in __consumer_offsets, as
// Kafka's share groups live in its group coordinator's shards: package
// group owns that log and implements it (the node wires the two). Its
// errors are the coordinator runtime's (coordinator.ErrNotCoordinator,
// ErrLoadInProgress, ErrCoordinatorNotAvailable).
type MembershipLog interface {
	// Append appends recs, records of group, to the group's offsets
	// partition and returns once they are committed; ErrNotShareGroup
	// when group is a classic or consumer group.
	Append(ctx context.Context, group string, recs []LogRecord) error
	// Ready is nil when this node coordinates group and its offsets
	// partition is loaded: the coordinator was given its share groups
	// (LoadGroups).
	Ready(group string) error
	// PartitionFor is group's offsets partition.
	PartitionFor(group string) int32
}

// SetMembershipLog has the coordinator write every membership change to
// l before it answers, and take its groups from LoadGroups; without it
// membership lives in memory only. Call it before serving.
func (c *Coordinator) SetMembershipLog(l MembershipLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.log = l
}

func (c *Coordinator) membershipLog() MembershipLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.log
}

// LoadGroups replaces the share groups of offsets partition p with those
// of groups, each its live records (the group coordinator calls it when it
// loaded p, before p serves requests). Members come back with their
// epochs and assignments and a fresh session: those alive keep
// heartbeating, the others expire. A group whose records do not decode is
// skipped and logged. It does not block.
func (c *Coordinator) LoadGroups(p int32, groups map[string][]LogRecord) {
	now := time.Now().UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropPartitionLocked(p)
	for id, recs := range groups {
		g, err := replayGroup(id, recs, now, c.cluster.Topic)
		if err != nil {
			c.cfg.Logger.Warn("share group records do not decode", "group", id, "err", err)
			continue
		}
		c.mu.groups[id] = g
	}
	if len(groups) > 0 {
		c.cfg.Logger.Info("loaded share groups", "partition", p, "groups", len(groups))
	}
}

// UnloadGroups forgets the share groups of offsets partition p. It does
// not block.
func (c *Coordinator) UnloadGroups(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropPartitionLocked(p)
}

// REQUIRES: c.mu held.
func (c *Coordinator) dropPartitionLocked(p int32) {
	if c.mu.log == nil {
		return
	}
	for id := range c.mu.groups {
		if c.mu.log.PartitionFor(id) == p {
			delete(c.mu.groups, id)
		}
	}
}

// ready is 0 when group id's membership may be read and changed here,
// else the error code to answer.
func (c *Coordinator) ready(id string) int16 {
	if !c.cluster.IsCoordinator(id) {
		return kerr.NotCoordinator.Code
	}
	if l := c.membershipLog(); l != nil {
		if err := l.Ready(id); err != nil {
			return logErrCode(err)
		}
	}
	return 0
}

// logErrCode is the Kafka error code of a MembershipLog failure.
func logErrCode(err error) int16 {
	switch {
	case errors.Is(err, ErrNotShareGroup):
		return kerr.GroupIDNotFound.Code
	case errors.Is(err, coordinator.ErrLoadInProgress):
		return kerr.CoordinatorLoadInProgress.Code
	case errors.Is(err, coordinator.ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.NotCoordinator.Code
}

// ErrNotShareGroup: the group id names a classic or consumer group
// (GROUP_ID_NOT_FOUND, "Group g is not a share group.", as Kafka answers).
var ErrNotShareGroup = errors.New("share: not a share group")

// errGroupMoved: the group was loaded or unloaded while a change was
// written (NOT_COORDINATOR: the member finds the coordinator again).
var errGroupMoved = errors.New("share: group reloaded during a write")

// update changes group id: fn gets a copy of the group (nil: none) and
// returns its next state (nil: deleted). The records that take the group
// there are appended to the membership log, and committed, before the
// copy replaces the group, so that what a member is answered survives the
// coordinator's move. Changes of one group are serialised; fn runs with
// c.mu held and must not block.
func (c *Coordinator) update(ctx context.Context, id string, fn func(g *shareGroup) (*shareGroup, error)) error {
	wl := c.writeLock(id)
	wl.Lock()
	defer c.writeUnlock(id, wl)
	c.mu.Lock()
	cur := c.mu.groups[id]
	next, err := fn(cur.clone())
	if err != nil {
		c.mu.Unlock()
		return err
	}
	l := c.mu.log
	var recs []LogRecord
	if l != nil {
		recs = groupRecords(id, cur, next)
	}
	if len(recs) == 0 {
		c.installLocked(id, next)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if err := l.Append(ctx, id, recs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.groups[id] != cur {
		return errGroupMoved
	}
	c.installLocked(id, next)
	return nil
}

// REQUIRES: c.mu held.
func (c *Coordinator) installLocked(id string, g *shareGroup) {
	if cur := c.mu.groups[id]; g != nil && (cur == nil || g.epoch > cur.epoch) && len(g.members) > 0 {
		// A new group epoch with members: a new assignment (Kafka's
		// ShareGroupRebalances, recorded with each target assignment).
		c.rebalances.Add(1)
	}
	if g == nil {
		delete(c.mu.groups, id)
		return
	}
	c.mu.groups[id] = g
}

// groupWriter serialises the changes of one group; users counts those
// holding or waiting for it, so that an idle group keeps none.
type groupWriter struct {
	sync.Mutex
	users int // guarded by Coordinator.mu
}

// writeLock returns the lock that serialises the changes of group id; the
// caller locks it and gives it back with writeUnlock.
func (c *Coordinator) writeLock(id string) *groupWriter {
	c.mu.Lock()
	defer c.mu.Unlock()
	wl := c.mu.writing[id]
	if wl == nil {
		wl = &groupWriter{}
		c.mu.writing[id] = wl
	}
	wl.users++
	return wl
}

// writeUnlock unlocks wl, group id's lock, and forgets it when no one
// else holds or waits for it.
func (c *Coordinator) writeUnlock(id string, wl *groupWriter) {
	wl.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if wl.users--; wl.users == 0 {
		delete(c.mu.writing, id)
	}
}

// clone copies g for a change: members are copied (their maps and slices
// are replaced, never changed in place), the topics map too.
func (g *shareGroup) clone() *shareGroup {
	if g == nil {
		return nil
	}
	n := *g
	n.members = make(map[string]*member, len(g.members))
	for id, m := range g.members {
		mc := *m
		n.members[id] = &mc
	}
	n.topics = maps.Clone(g.topics)
	return &n
}
