package share

import (
	"context"
	"slices"
	"sync"
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
// Membership lives in memory only (not in __consumer_offsets): after the
// coordinator moves, members are unknown to the new one and rejoin with
// epoch 0, which a share group allows at any time (docs/consumer-groups.md).
type Coordinator struct {
	cfg     Config
	cluster Cluster
	parts   *Manager // nil: member expiry releases nothing locally

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		groups map[string]*shareGroup
	}
}

// NewCoordinator returns a coordinator; parts, when not nil, is told of
// members that leave or expire so that it releases their records at once.
func NewCoordinator(cfg Config, cluster Cluster, parts *Manager) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, cluster: cluster, parts: parts}
	c.mu.groups = map[string]*shareGroup{}
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
	type left struct{ group, member string }
	var gone []left
	c.mu.Lock()
	for id, g := range c.mu.groups {
		for _, m := range g.expire(nowMs, c.cfg.SessionTimeoutMs) {
			gone = append(gone, left{id, m})
		}
	}
	c.mu.Unlock()
	for _, l := range gone {
		c.cfg.Logger.Info("share group member expired", "group", l.group, "member", l.member)
		if c.parts != nil {
			c.parts.ReleaseMember(l.group, l.member)
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

// DeleteGroup forgets an empty share group; false when it has members
// (NON_EMPTY_GROUP) or does not exist.
func (c *Coordinator) DeleteGroup(id string) (existed, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.mu.groups[id]
	if !ok {
		return false, false
	}
	if len(g.members) > 0 {
		return true, false
	}
	delete(c.mu.groups, id)
	return true, true
}

// Has reports whether id is a share group on this node.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.groups[id]
	return ok
}
