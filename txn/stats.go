package txn

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Stats are the coordinator's figures (the node's metrics read them at
// scrape time): the transactions open now over the partitions this node
// coordinates, and totals since it started.
type Stats struct {
	// Open counts transactions Ongoing or waiting for their markers.
	Open int
	// OldestOpenMs is the age of the oldest open transaction, 0 when none.
	OldestOpenMs int64
	// Committed and Aborted count transactions completed here (their
	// Complete state written); TimedOut the aborts this coordinator began
	// for a transaction past its timeout.
	Committed, Aborted, TimedOut int64
}

// counters are the totals behind Stats.
type counters struct {
	committed, aborted, timedOut atomic.Int64
}

// Stats returns the coordinator's figures now. Safe for concurrent use.
func (c *Coordinator) Stats() Stats {
	st := Stats{Committed: c.counts.committed.Load(), Aborted: c.counts.aborted.Load(), TimedOut: c.counts.timedOut.Load()}
	now := c.cfg.Now().UnixMilli()
	for _, sh := range c.readyShards() {
		sh.mu.Lock()
		for _, m := range sh.mu.txns {
			if m.state != kmsg.TransactionStateOngoing && !m.preparing() {
				continue
			}
			st.Open++
			if m.start > 0 {
				st.OldestOpenMs = max(st.OldestOpenMs, now-m.start)
			}
		}
		sh.mu.Unlock()
	}
	return st
}
