package group

// The group coordinator's metrics, Kafka's GroupCoordinatorMetrics: the
// groups of the offsets partitions this node has loaded, by type and
// state, their committed offsets, and the rebalances and commits since
// the node started. Each group's runner publishes its type, state and
// offset count after every event (runner.publish), so a scrape reads
// atomics and never waits for a group's goroutine.

import "sync/atomic"

// Figures are the group coordinator's metrics at one moment.
type Figures struct {
	// Classic counts the classic groups by state (Empty,
	// PreparingRebalance, CompletingRebalance, Stable; never Dead: a dead
	// group is gone).
	Classic map[string]int
	// Consumer counts the KIP-848 consumer groups by state (Empty,
	// Assigning, Reconciling, Stable).
	Consumer map[string]int
	// Offsets is the number of committed offsets (Kafka's NumOffsets).
	Offsets int
	// ClassicRebalances counts the classic groups' completed rebalances
	// (the leader's assignment written: Kafka's
	// group-completed-rebalance-count); ConsumerRebalances the consumer
	// groups' new target assignments (consumer-group-rebalance-count);
	// OffsetCommits the offsets committed (offset-commit-count); all since
	// the node started.
	ClassicRebalances, ConsumerRebalances, OffsetCommits int64
	// OffsetsExpired counts the offsets expired by offsets.retention
	// (Kafka's offset-expiration-count) since the node started.
	OffsetsExpired int64
}

// counters are the coordinator's totals since it started.
type counters struct {
	classicRebalances, consumerRebalances, offsetCommits atomic.Int64
	offsetsExpired                                       atomic.Int64
}

// The increments are nil-safe: a group a test runs without a coordinator
// has no counters.
func (c *counters) classicRebalanced() {
	if c != nil {
		c.classicRebalances.Add(1)
	}
}

func (c *counters) consumerRebalanced() {
	if c != nil {
		c.consumerRebalances.Add(1)
	}
}

func (c *counters) committed(n int) {
	if c != nil {
		c.offsetCommits.Add(int64(n))
	}
}

// Group kinds as a runner publishes them.
const (
	statNone     = iota // no group to count (a share group is the share coordinator's)
	statClassic         // state: a State
	statConsumer        // state: an index in consumerStates
)

var consumerStates = []string{"Empty", "Assigning", "Reconciling", "Stable"}

// publish stores what the metrics read of g: its kind, state and number
// of committed offsets. It runs on g's goroutine after each event.
func (r *runner) publish() {
	g := r.g
	kind, state := uint64(statClassic), uint64(g.state)
	switch {
	case g.isShare():
		kind, state = statNone, 0
	case g.consumer != nil:
		kind = statConsumer
		st := g.consumer.state()
		for i, s := range consumerStates {
			if s == st {
				state = uint64(i)
			}
		}
	}
	r.stat.Store(kind<<56 | state<<48 | uint64(len(g.offsets)))
}

// Figures returns the coordinator's metrics over the offsets partitions
// this node has loaded. Safe to call from any goroutine.
func (c *Coordinator) Figures() Figures {
	f := Figures{Classic: map[string]int{}, Consumer: map[string]int{},
		ClassicRebalances:  c.counters.classicRebalances.Load(),
		ConsumerRebalances: c.counters.consumerRebalances.Load(),
		OffsetCommits:      c.counters.offsetCommits.Load(),
		OffsetsExpired:     c.counters.offsetsExpired.Load()}
	for _, s := range []State{StateEmpty, StatePreparingRebalance, StateCompletingRebalance, StateStable} {
		f.Classic[s.String()] = 0
	}
	for _, s := range consumerStates {
		f.Consumer[s] = 0
	}
	for p := range c.cfg.Partitions {
		sh, ok := c.rt.Loaded(p)
		if !ok {
			continue
		}
		sh.mu.Lock()
		for _, r := range sh.mu.groups {
			st := r.stat.Load()
			kind, state := st>>56, int(st>>48&0xff)
			f.Offsets += int(st & 0xffffffff)
			switch kind {
			case statClassic:
				if s := State(state); s != StateDead {
					f.Classic[s.String()]++
				}
			case statConsumer:
				f.Consumer[consumerStates[state]]++
			}
		}
		sh.mu.Unlock()
	}
	return f
}
