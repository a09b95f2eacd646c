package group

// Offset expiration (offsets.retention.minutes), as Kafka 4's coordinator
// does it (GroupCoordinatorShard.cleanupGroupMetadata, every
// offsets.retention.check.interval.ms): each group of a loaded offsets
// partition expires its committed offsets
// (OffsetMetadataManager.cleanupExpiredOffsets), then a group left with
// none that is empty is deleted (GroupMetadataManager.maybeDeleteGroup).
//
// When an offset expires is the group's OffsetExpirationCondition:
//
//   - A classic group with a protocol type that is Empty: retention after
//     it became Empty (its state timestamp, kept in its metadata record),
//     or after the commit for a group that has none.
//   - A classic group of protocol type "consumer" that is Stable with
//     subscriptions that decode: retention after the commit, for topics no
//     member subscribes to.
//   - A group with no protocol type (standalone commits, no member ever):
//     retention after the commit.
//   - A KIP-848 consumer group: retention after the commit, for topics no
//     member subscribes to, with or without members.
//   - Any other classic group (rebalancing, or not of the consumer
//     protocol with members) expires nothing and is not deleted.
//
// A partition with a pending transactional offset, or with a commit not
// yet replicated, is kept, and so is a group with either. Expired offsets
// and deleted groups are tombstoned in __consumer_offsets, so that they
// stay gone at the next load; the tombstones are applied at once, as
// OffsetDelete's are, and a leadership change before they are replicated
// leaves the next leader to expire them again. Share groups have no
// committed offsets and are left alone. The retention time of OffsetCommit
// v2-v4 is not honoured (every offset uses the node's).

import (
	"context"
	"regexp"
	"slices"
	"time"
)

// expireLoop runs the retention check every OffsetsRetentionCheckInterval
// until the coordinator closes.
func (c *Coordinator) expireLoop() {
	ctx := c.rt.Context()
	t := time.NewTicker(c.cfg.OffsetsRetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.expireOffsets(ctx)
		}
	}
}

// expireOffsets submits one retention check to every group of the offsets
// partitions this node has loaded. It waits for the groups to take the
// event, not for their appends.
func (c *Coordinator) expireOffsets(ctx context.Context) {
	var runners []*runner
	for _, sh := range c.rt.Ready() {
		sh.mu.Lock()
		for _, r := range sh.mu.groups {
			runners = append(runners, r)
		}
		sh.mu.Unlock()
	}
	retention := c.cfg.OffsetsRetention
	for _, r := range runners {
		if !r.submit(ctx, func(g *group) { g.expireOffsets(retention) }) && ctx.Err() != nil {
			return
		}
	}
}

// expiryBase returns when an offset's retention starts counting, and false
// when no offset of g may expire now (Kafka's offsetExpirationCondition).
func (g *group) expiryBase() (func(offsetEntry) int64, bool) {
	commit := func(e offsetEntry) int64 { return e.commitTimestamp }
	switch {
	case g.consumer != nil:
		return commit, true
	case g.protocolType == "":
		return commit, true
	case g.state == StateEmpty && len(g.members) == 0:
		if g.stateSince.IsZero() {
			return commit, true
		}
		since := g.stateSince.UnixMilli()
		return func(offsetEntry) int64 { return since }, true
	case g.state == StateStable && g.protocolType == "consumer" && g.protocol != "":
		if _, ok := g.subscribedTopics(); ok {
			return commit, true
		}
	}
	return nil, false
}

// expirySubscribed reports, per topic, whether its offsets never expire:
// a member subscribes to it (by name, or by a regex that matches it).
func (g *group) expirySubscribed() func(topic string) bool {
	if g.consumer != nil {
		names := map[string]bool{}
		var res []*regexp.Regexp
		for _, m := range g.consumer.members {
			for _, t := range m.subscribedTopics {
				names[t] = true
			}
			if m.re != nil {
				res = append(res, m.re)
			}
		}
		if len(g.consumer.members) > 0 {
			// The topics the target was computed with (a regex's
			// matches among them).
			for _, t := range g.consumer.subscription {
				names[t.name] = true
			}
		}
		return func(topic string) bool {
			return names[topic] || slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(topic) })
		}
	}
	var names map[string]bool
	if len(g.members) > 0 {
		names, _ = g.subscribedTopics()
	}
	return func(topic string) bool { return names[topic] }
}

// empty reports whether g has no member, so that it may be deleted once it
// has no offsets either (Kafka's Group.isEmpty).
func (g *group) empty() bool {
	if g.consumer != nil {
		return len(g.consumer.members) == 0 && len(g.members) == 0
	}
	return g.state == StateEmpty && len(g.members) == 0 && len(g.pending) == 0
}

// expireOffsets is one retention check of g at g.now: it tombstones the
// offsets that expired and, when none is left and g is empty, the group.
// It returns how many offsets expired and whether g was deleted.
func (g *group) expireOffsets(retention time.Duration) (expired int, deleted bool) {
	if g.state == StateDead || len(g.share) > 0 {
		return 0, false
	}
	allExpired := true
	var gone []topicPartition
	if len(g.offsets) > 0 {
		base, ok := g.expiryBase()
		if !ok {
			return 0, false
		}
		subscribed := g.expirySubscribed()
		now := g.now.UnixMilli()
		for tp, e := range g.offsets {
			_, unreplicated := g.unreplicated[tp]
			if subscribed(tp.topic) || unreplicated || g.pendingTxnFor(tp) || now-base(e) < retention.Milliseconds() {
				allExpired = false
				continue
			}
			gone = append(gone, tp)
		}
	}
	if len(g.unreplicated) > 0 || len(g.pendingTxn) > 0 {
		allExpired = false
	}
	deleteGroup := allExpired && g.empty()
	if len(gone) == 0 && !deleteGroup {
		return 0, false
	}
	recs := make([]record, 0, len(gone)+1)
	for _, tp := range gone {
		recs = append(recs, record{key: offsetKey(g.id, tp)})
	}
	if deleteGroup {
		recs = append(recs, g.groupTombstones()...)
	}
	hw, err := g.persist(recs)
	if err != nil {
		// The next check (here, or at the next leader) tries again.
		g.limits.Logger.Warn("expiring offsets", "component", "group", "group", g.id, "partitions", len(gone), "err", err)
		return 0, false
	}
	for _, tp := range gone {
		g.forgetOffset(tp, hw)
	}
	if g.counters != nil {
		g.counters.offsetsExpired.Add(int64(len(gone)))
	}
	if deleteGroup {
		g.consumer = nil
		g.setState(StateDead)
	}
	g.limits.Logger.Info("expired offsets", "component", "group", "group", g.id, "partitions", len(gone), "group_deleted", deleteGroup)
	return len(gone), deleteGroup
}

// pendingTxnFor reports whether a transaction has a pending offset of tp
// in g.
func (g *group) pendingTxnFor(tp topicPartition) bool {
	for _, pend := range g.pendingTxn {
		if _, ok := pend[tp]; ok {
			return true
		}
	}
	return false
}
