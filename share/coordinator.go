package share

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// Cluster is what the share coordinator needs of the cluster.
type Cluster interface {
	// IsCoordinator reports whether this node coordinates group: it leads
	// the group's __consumer_offsets partition (the same node FindCoordinator
	// names for the group).
	IsCoordinator(group string) bool
	// Topic returns a live topic's id and partition count.
	Topic(name string) (TopicMeta, bool)
}

// Coordinator is this node's share group coordinator: the membership of
// the share groups it coordinates. It is safe for concurrent use; Close
// stops its expiry loop.
//
// With a MembershipLog (SetMembershipLog) every change of a group's epoch,
// members or assignments is written to __consumer_offsets before it is
// answered, and a coordinator that loads the group's offsets partition
// gets the group back (LoadGroups): after the coordinator moves, members
// keep their epochs and heartbeat on (membership.go, group_records.go).
type Coordinator struct {
	cfg     Config
	cluster Cluster
	parts   *Manager // nil: member expiry releases nothing locally

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rebalances atomic.Int64 // new group epochs with members, since the node started (Figures)

	mu struct {
		sync.Mutex
		groups map[string]*shareGroup
		// writing serialises the changes of each group (update).
		writing map[string]*groupWriter
		log     MembershipLog // nil: membership in memory only
	}
}

// NewCoordinator returns a coordinator; parts, when not nil, is told of
// members that leave or expire so that it releases their records at once.
func NewCoordinator(cfg Config, cluster Cluster, parts *Manager) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, cluster: cluster, parts: parts}
	c.mu.groups = map[string]*shareGroup{}
	c.mu.writing = map[string]*groupWriter{}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.expireLoop()
	return c
}

// Register serves ShareGroupHeartbeat and ShareGroupDescribe on reg.
func (c *Coordinator) Register(reg *kafka.Registry) {
	reg.Register(kmsg.ShareGroupHeartbeat, 1, 1, c.handleShareGroupHeartbeat)
	reg.Register(kmsg.ShareGroupDescribe, 1, 1, c.handleShareGroupDescribe)
	reg.Register(kmsg.DescribeShareGroupOffsets, 0, 1, c.handleDescribeShareGroupOffsets)
	reg.Register(kmsg.AlterShareGroupOffsets, 0, 0, c.handleAlterShareGroupOffsets)
	reg.Register(kmsg.DeleteShareGroupOffsets, 0, 0, c.handleDeleteShareGroupOffsets)
	reg.SetFeature(kafka.Feature{Name: "share.version", MinLevel: 0, MaxLevel: 1, Finalized: 1})
}

// Close stops the expiry loop. It is idempotent.
func (c *Coordinator) Close() {
	c.cancel()
	c.wg.Wait()
}

func (c *Coordinator) expireLoop() {
	defer c.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			c.expire(now.UnixMilli())
		}
	}
}

func (c *Coordinator) expire(nowMs int64) {
	var due []string
	c.mu.Lock()
	for id, g := range c.mu.groups {
		if g.expiring(nowMs, c.cfg.group(id).sessionTimeoutMs) {
			due = append(due, id)
		}
	}
	c.mu.Unlock()
	for _, id := range due {
		var gone []string
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		err := c.update(ctx, id, func(g *shareGroup) (*shareGroup, error) {
			if g != nil {
				gone = g.expire(nowMs, c.cfg.group(id).sessionTimeoutMs)
			}
			return g, nil
		})
		cancel()
		if err != nil {
			c.cfg.Logger.Warn("share group members not expired", "group", id, "err", err) // tried again at the next tick
			continue
		}
		for _, m := range gone {
			c.cfg.Logger.Info("share group member expired", "group", id, "member", m)
			if c.parts != nil {
				c.parts.ReleaseMember(id, m)
			}
		}
	}
}

// Groups describes the share groups this node coordinates.
func (c *Coordinator) Groups() []GroupInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []GroupInfo
	for _, g := range c.mu.groups {
		if c.cluster.IsCoordinator(g.id) {
			out = append(out, g.info())
		}
	}
	slices.SortFunc(out, func(a, b GroupInfo) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}

// Group describes one share group, false when this node has no such
// group.
func (c *Coordinator) Group(id string) (GroupInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.mu.groups[id]
	if !ok {
		return GroupInfo{}, false
	}
	return g.info(), true
}

// DeleteGroup forgets an empty share group (with tombstones in the
// membership log); false when it has members (NON_EMPTY_GROUP) or does not
// exist.
func (c *Coordinator) DeleteGroup(ctx context.Context, id string) (existed, deleted bool, err error) {
	err = c.update(ctx, id, func(g *shareGroup) (*shareGroup, error) {
		existed = g != nil
		if g == nil || len(g.members) > 0 {
			return g, nil
		}
		deleted = true
		return nil, nil
	})
	if err != nil {
		return existed, false, err
	}
	return existed, deleted, nil
}

// Has reports whether id is a share group on this node.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.groups[id]
	return ok
}
