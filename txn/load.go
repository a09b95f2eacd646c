package txn

import (
	"fmt"
	"time"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// readLoadBytes bounds one read of a state partition at load.
const readLoadBytes = 1 << 20

// readPartition replays rep from its log start to its log end (as the
// group coordinator does, and for the same reason: everything up to the
// log end is the new leader's to commit) and returns the last state of
// each transactional id; a tombstone deletes. Records that do not decode
// are counted in skipped.
func readPartition(rep *partition.Replica) (txns map[string]*txnMeta, skipped int, err error) {
	txns = map[string]*txnMeta{}
	l := rep.Log()
	end := l.LogEndOffset()
	for off := l.LogStartOffset(); off < end; {
		b, err := l.ReadBytes(off, readLoadBytes, end, true)
		if err != nil {
			return nil, skipped, fmt.Errorf("reading %s-%d at %d: %w", StateTopic, rep.Partition(), off, err)
		}
		if len(b) == 0 {
			break
		}
		next := off
		err = batch.Split(b, func(h *batch.Header, one []byte) error {
			next = h.NextOffset()
			if h.Control() {
				return nil
			}
			return batch.ForEachRecord(one, 64<<20, func(r *batch.Record) error {
				id, err := decodeStateKey(r.Key)
				if err != nil {
					skipped++
					return nil
				}
				if r.Value == nil {
					delete(txns, id)
					return nil
				}
				m, err := decodeStateValue(id, r.Value)
				if err != nil {
					skipped++
					return nil
				}
				txns[id] = m
				return nil
			})
		})
		if err != nil {
			return nil, skipped, fmt.Errorf("decoding %s-%d at %d: %w", StateTopic, rep.Partition(), off, err)
		}
		if next <= off {
			break
		}
		off = next
	}
	return txns, skipped, nil
}

// load reads sh's partition, publishes its transactions and resumes the
// markers of those left in a Prepare state, unless sh was unloaded
// meanwhile. On failure the shard is dropped so that the next request
// tries again.
//
// At most loadParallelism partitions are read at once; a shard unloaded
// while it waits for its turn is not read.
func (c *Coordinator) load(sh *shard) {
	select {
	case c.loadSlots <- struct{}{}:
	case <-sh.ctx.Done():
		return
	}
	sh.mu.Lock()
	gone := sh.mu.unloaded
	sh.mu.Unlock()
	if gone {
		<-c.loadSlots
		return
	}
	start := time.Now()
	txns, skipped, err := readPartition(sh.replica)
	<-c.loadSlots
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	sh.mu.Lock()
	if sh.mu.unloaded {
		sh.mu.Unlock()
		c.mu.Unlock()
		return
	}
	if err != nil {
		sh.mu.Unlock()
		c.log.Error("loading transactions failed", "partition", sh.partition, "err", err)
		c.unloadLocked(sh)
		c.mu.Unlock()
		return
	}
	var preparing []*txnMeta
	for _, m := range txns {
		if m.preparing() {
			preparing = append(preparing, m)
		}
	}
	n := len(txns)
	sh.mu.txns = txns
	sh.mu.ready = true
	sh.mu.Unlock()
	c.mu.Unlock()
	for _, m := range preparing {
		c.startCompletion(sh, m)
	}
	resumed := len(preparing)
	if skipped > 0 {
		c.log.Warn("skipped records that do not decode", "partition", sh.partition, "records", skipped)
	}
	c.log.Info("loaded transactions", "partition", sh.partition, "transactional_ids", n, "resumed", resumed, "took", time.Since(start))
}
