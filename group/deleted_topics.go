package group

// Offsets of deleted topics. A topic's committed offsets go with it, as
// Kafka's coordinator deletes them (GroupCoordinatorService
// .onPartitionsDeleted writes their tombstones in every group): a group
// that consumed a topic which is deleted and created again under its name
// starts the new topic from its reset policy, instead of resuming at the
// old topic's offset (skipping records, or OFFSET_OUT_OF_RANGE).
//
//   - When the node learns of a deletion (TopicDeleted, from the control
//     plane's watch), every group of the offsets partitions it has loaded
//     appends tombstones for the offsets committed for that topic: those
//     recorded with its id, and those recorded without an id (written by
//     an older Shale) under its name. Pending transactional offsets of
//     the topic are dropped with them, as a tombstone drops them in
//     Kafka's replay.
//   - A partition loaded after the deletion (the node was not its leader
//     then, or it was loading) does the same for every offset recorded
//     with an id the cluster no longer has, before it serves a request.
//     An offset recorded without an id is kept at load: its topic cannot
//     be told from a new one of the same name.
//   - Until the tombstones are written, OffsetFetch answers no offset for
//     an id that is not the topic's (topicView.current).
//
// The tombstones are applied at once (as OffsetDelete's are) and not
// waited for: one that is not replicated before a leadership change is
// written again by the next leader's load.

import (
	"context"
)

// TopicDeleted deletes the committed offsets of topic name, id id, in
// every group of the offsets partitions this node has loaded. The node
// calls it for each topic the control plane deletes. It does not wait for
// the groups: it is safe to call from the control plane's event
// goroutine.
func (c *Coordinator) TopicDeleted(name string, id [16]byte) {
	match := func(tp topicPartition, e offsetEntry) bool {
		return tp.topic == name && (e.topicID == id || e.topicID == topicID{})
	}
	var runners []*runner
	for p := range c.cfg.Partitions {
		sh, ok := c.rt.Loaded(p)
		if !ok {
			continue
		}
		sh.mu.Lock()
		for _, r := range sh.mu.groups {
			runners = append(runners, r)
		}
		sh.mu.Unlock()
	}
	if len(runners) == 0 {
		return
	}
	ctx := c.rt.Context()
	c.rt.Go(func() {
		for _, r := range runners {
			r.submit(ctx, func(g *group) { g.dropTopicOffsets(match, "topic deleted") })
		}
	})
}

// missing reports whether a commit of partition p of topic names what the
// cluster does not have (OffsetCommit and TxnOffsetCommit answer it
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka does). A cluster that lists no
// topics (TopicLister) misses nothing.
func (c *Coordinator) missing(view *topicView, topic string, p int32) bool {
	if _, ok := c.cluster.(TopicLister); !ok {
		return false
	}
	t, ok := view.byName[topic]
	return !ok || p < 0 || p >= t.Partitions
}

// deletedAtLoad is the match of a shard's load: an offset recorded with a
// topic id the cluster does not have (nil: the cluster lists no topics, so
// nothing can be told).
func (c *Coordinator) deletedAtLoad() func(topicPartition, offsetEntry) bool {
	if _, ok := c.cluster.(TopicLister); !ok {
		return nil
	}
	view := c.topicView()
	return func(_ topicPartition, e offsetEntry) bool {
		if e.topicID == (topicID{}) {
			return false
		}
		_, ok := view.byID[e.topicID]
		return !ok
	}
}

// hasMatch reports whether some offset of g, committed or pending in a
// transaction, matches.
func (lg *loadedGroup) hasMatch(match func(topicPartition, offsetEntry) bool) bool {
	for tp, e := range lg.offsets {
		if match(tp, e) {
			return true
		}
	}
	for _, pend := range lg.pendingTxn {
		for tp, e := range pend {
			if match(tp, e) {
				return true
			}
		}
	}
	return false
}

// dropTopicOffsets appends a tombstone for every offset of g that matches
// (committed, not yet replicated, or pending in a transaction) and forgets
// them. why is logged with the count.
func (g *group) dropTopicOffsets(match func(topicPartition, offsetEntry) bool, why string) {
	gone := map[topicPartition]bool{}
	for tp, e := range g.offsets {
		if match(tp, e) {
			gone[tp] = true
		}
	}
	for tp, e := range g.unreplicated {
		if match(tp, e) {
			gone[tp] = true
		}
	}
	for _, pend := range g.pendingTxn {
		for tp, e := range pend {
			if match(tp, e) {
				gone[tp] = true
			}
		}
	}
	if len(gone) == 0 {
		return
	}
	recs := make([]record, 0, len(gone))
	for tp := range gone {
		recs = append(recs, record{key: offsetKey(g.id, tp)})
	}
	hw, err := g.persist(recs)
	if err != nil {
		// The next leader's load deletes those recorded with an id.
		g.limits.Logger.Warn("deleting offsets of a deleted topic", "component", "group", "group", g.id, "reason", why, "partitions", len(gone), "err", err)
		return
	}
	for tp := range gone {
		g.forgetOffset(tp, hw)
	}
	g.limits.Logger.Info("deleted offsets of a deleted topic", "component", "group", "group", g.id, "reason", why, "partitions", len(gone))
}

// submitFirst queues fn as r's first event. REQUIRES: r was just started
// (its queue is empty), so it never blocks.
func (r *runner) submitFirst(fn func(*group)) {
	r.submit(context.Background(), fn)
}
