package group

// Compaction of __consumer_offsets, done by the coordinator itself.
//
// Kafka keeps __consumer_offsets small with the log cleaner
// (cleanup.policy=compact). Shale's segment package has no cleaner yet, so
// the coordinator, which is the only writer of its partitions, compacts
// them by rewriting: it rolls the log, notes the log end offset S, asks
// every loaded group to append its live state (its committed offsets and
// its metadata; nothing for deleted keys), waits for the high watermark,
// and then deletes the segments below S. Each group appends its snapshot
// from its own goroutine, after S, with everything it changed before; all
// it changes later follows. So the log from S on holds the live state of
// every group, and a coordinator that loads it from there rebuilds the same
// groups. A crash before the delete leaves a longer log, never a shorter
// one. A compaction gives up while a group has transactional offsets
// waiting for their marker (they live only in their transactional batch
// below S); the next one is tried after CompactAfterRecords more appends.
// Tombstones vanish at the first compaction after them (there is no
// delete.retention.ms grace: no consumer reads this topic but the
// coordinator).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// snapshotChunk bounds the records of one snapshot batch.
const snapshotChunk = 500

// noteAppended counts n records appended to sh and starts a compaction
// when the count passes the threshold and none is running.
func (c *Coordinator) noteAppended(sh *shard, n int) {
	if sh.sinceCompact.Add(int64(n)) < c.cfg.CompactAfterRecords || !sh.compacting.CompareAndSwap(false, true) {
		return
	}
	sh.sinceCompact.Store(0)
	c.rt.Go(func() {
		defer sh.compacting.Store(false)
		if err := c.compact(c.rt.Context(), sh); err != nil {
			c.log.Warn("compacting offsets partition", "partition", sh.partition, "err", err)
		}
	})
}

// compact rewrites sh's live state after a new segment and deletes the
// segments before it. A group that stops meanwhile (deleted, or the shard
// unloaded) simply appends nothing.
func (c *Coordinator) compact(ctx context.Context, sh *shard) error {
	start := time.Now()
	l := sh.replica.Log()
	if err := l.Roll(); err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	s := l.LogEndOffset()
	sh.mu.Lock()
	if sh.mu.unloaded {
		sh.mu.Unlock()
		return ErrNotCoordinator
	}
	runners := make([]*runner, 0, len(sh.mu.groups))
	for _, r := range sh.mu.groups {
		runners = append(runners, r)
	}
	sh.mu.Unlock()
	for _, r := range runners {
		var perr error
		_, err := c.call(ctx, r, func(g *group, send replyFn) {
			hw := int64(-1)
			if len(g.pendingTxn) > 0 {
				// Its transactional offsets are only in the batches
				// below s, until their markers: cutting them would
				// lose a commit that its marker applies.
				perr = fmt.Errorf("group %q has transactional offsets pending", g.id)
				send(nil, -1)
				return
			}
			recs := g.liveRecords()
			for len(recs) > 0 && perr == nil {
				n := min(len(recs), snapshotChunk)
				hw, perr = g.persist(recs[:n])
				recs = recs[n:]
			}
			if perr != nil {
				hw = -1
			}
			send(nil, hw)
		}, func() kmsg.Response { return nil })
		if err != nil {
			return err
		}
		if perr != nil {
			return perr
		}
	}
	before := l.LogStartOffset()
	if _, err := sh.replica.DeleteRecordsBefore(s); err != nil {
		return fmt.Errorf("deleting below %d: %w", s, err)
	}
	c.log.Info("compacted offsets partition", "partition", sh.partition, "groups", len(runners),
		"log_start_before", before, "log_start", l.LogStartOffset(), "took", time.Since(start))
	return nil
}

// liveRecords is the group's live state as records: its metadata (when it
// ever had any) and the last offset appended per partition, replicated or
// not yet (a snapshot replicated replicates what precedes it).
func (g *group) liveRecords() []record {
	var recs []record
	if g.generation > 0 || len(g.members) > 0 {
		recs = append(recs, record{key: groupKey(g.id), value: groupValue(g.metadataValue())})
	}
	if g.consumer != nil {
		recs = append(recs, g.consumer.liveRecords(g.id)...)
	}
	for tp, e := range g.latestOffsets() {
		recs = append(recs, record{key: offsetKey(g.id, tp), value: offsetValue(e)})
	}
	return append(recs, g.shareRecords()...)
}
