package txn

import (
	"time"

	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// readPartition replays rep from its log start to its log end (as the
// group coordinator does, and for the same reason: everything up to the
// log end is the new leader's to commit) and returns the last state of
// each transactional id; a tombstone deletes. Records that do not decode
// are counted in skipped.
func readPartition(rep *partition.Replica) (txns map[string]*txnMeta, skipped int, err error) {
	txns = map[string]*txnMeta{}
	err = coordinator.Replay(rep, StateTopic, func(h *batch.Header, one []byte) error {
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
		return nil, skipped, err
	}
	return txns, skipped, nil
}

// Load reads sh's partition (coordinator.Shard).
func (sh *shard) Load() error {
	start := time.Now()
	txns, skipped, err := readPartition(sh.replica)
	if err != nil {
		return err
	}
	sh.loaded, sh.skipped = txns, skipped
	sh.c.log.Debug("read transactions", "partition", sh.partition, "took", time.Since(start))
	return nil
}

// Activate publishes the transactions Load read and resumes the markers
// of those left in a Prepare state (coordinator.Shard).
func (sh *shard) Activate() {
	c := sh.c
	var preparing []*txnMeta
	for _, m := range sh.loaded {
		if m.preparing() {
			preparing = append(preparing, m)
		}
	}
	n := len(sh.loaded)
	sh.mu.Lock()
	sh.mu.txns = sh.loaded
	sh.mu.ready = true
	sh.mu.Unlock()
	sh.loaded = nil
	for _, m := range preparing {
		c.startCompletion(sh, m)
	}
	if sh.skipped > 0 {
		c.log.Warn("skipped records that do not decode", "partition", sh.partition, "records", sh.skipped)
	}
	c.log.Info("loaded transactions", "partition", sh.partition, "transactional_ids", n, "resumed", len(preparing))
}
