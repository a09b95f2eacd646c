package controlplane

import (
	"context"
	"errors"
	"maps"
	"time"
)

// BalancerConfig configures the controller's replica balancer
// (balancer.go).
type BalancerConfig struct {
	// Enable turns the balancer on. Draining brokers are only emptied
	// while it is on.
	Enable bool
	// MaxMoves bounds the reassignments in progress at once. Default 8.
	MaxMoves int
	// Skew is the replica-count difference between the most and least
	// loaded hosts that is tolerated. Default 2.
	Skew int
	// Interval is how often the controller plans a pass. Default 1 s.
	Interval time.Duration
	// LocalSizes reports the bytes of this node's local replicas
	// (segment .log files), by partition: the estimate of what a move of
	// one of them copies (on a tiered topic the local tail, all a new
	// replica fetches). Nil: unknown.
	LocalSizes func() map[PartitionKey]int64
	// OnPass is called after every pass with its plan and what was
	// written: the metrics' hook. It runs on the controller's goroutine.
	OnPass func(BalancePass)
}

// PartitionKey names a partition.
type PartitionKey struct {
	Topic     string
	Partition int32
}

// BalancePass is what one balancer pass planned and wrote.
type BalancePass struct {
	Plan BalancePlan
	// Started counts the moves written, by kind; StartedBytes the
	// estimated bytes of the copying ones (unknown sizes count 0).
	Started      map[MoveKind]int
	StartedBytes int64
	// Finished counts the reassignments that completed since the last
	// pass (ones this controller saw complete).
	Finished int
	// BalancedAfter is set on the pass that found the cluster balanced
	// after an unbalanced one: how long that took since the first
	// unbalanced pass.
	BalancedAfter time.Duration
}

// balancerState is owned by the controller's loop goroutine.
type balancerState struct {
	lastPass       time.Time
	unbalancedFrom time.Time // zero while balanced
	draining       map[int32]bool
	inFlight       map[PartitionKey]bool // reassignments in progress at the last pass
	// The last pass's plan and the Store's generation (Store.gen) it was
	// made at, when it had no move to write: while neither the cache nor
	// the draining brokers moved since, the next plan would be the same,
	// and the pass costs no walk over the partitions.
	quiet    bool
	quietGen uint64
	plan     BalancePlan
}

// BalanceView builds the view PlanBalance decides from, from the store's
// cache, draining (Store.Draining) and this node's local sizes (nil:
// unknown). Any node can build it: `shale cluster rebalance --dry-run`
// asks a node's admin API for the plan.
func (s *Store) BalanceView(draining map[int32]bool, sizes map[PartitionKey]int64, maxMoves, skew int) ([]PartitionState, BalanceView) {
	var parts []PartitionState
	for _, t := range s.Topics() {
		parts = append(parts, s.Partitions(t.Name)...)
	}
	brokers := s.Brokers()
	offline := map[int32][]OfflineReplica{}
	for _, b := range brokers {
		offline[b.NodeID] = s.OfflineReplicas(b.NodeID)
	}
	v := BalanceView{Brokers: brokers, Draining: draining, Offline: offline, MaxMoves: maxMoves, Skew: skew}
	if sizes != nil {
		v.Bytes = func(st PartitionState) int64 {
			if n, ok := sizes[PartitionKey{st.Topic, st.Partition}]; ok {
				return n
			}
			return -1
		}
	}
	return parts, v
}

// BalancerDefaults fills the zero fields of cfg.
func (cfg BalancerConfig) withDefaults() BalancerConfig {
	if cfg.MaxMoves <= 0 {
		cfg.MaxMoves = 8
	}
	if cfg.Skew <= 0 {
		cfg.Skew = 2
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	return cfg
}

// balanceReplicas runs one balancer pass when one is due: reads the
// draining brokers, plans (PlanBalance) and writes the plan's moves, each
// fenced by the controller epoch and by compare-and-set on the record it
// was decided from (a record that changed meanwhile waits for the next
// pass). It reports whether it wrote anything. REQUIRES: called from the
// loop goroutine, as controller.
func (c *Controller) balanceReplicas(ctx context.Context) bool {
	cfg := c.cfg.Balancer
	if !cfg.Enable || time.Since(c.bal.lastPass) < cfg.Interval {
		return false
	}
	c.bal.lastPass = time.Now()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
	draining, _, err := c.store.Draining(rctx)
	cancel()
	if err != nil {
		c.log.Warn("balancer: reading the draining brokers", "err", err)
		return false
	}
	gen := c.store.gen.Load() // before the view: a change after it makes the next pass plan again
	if c.bal.quiet && gen == c.bal.quietGen && maps.Equal(draining, c.bal.draining) {
		if cfg.OnPass != nil {
			cfg.OnPass(BalancePass{Plan: c.bal.plan, Started: map[MoveKind]int{}})
		}
		return !c.bal.plan.Balanced()
	}
	c.bal.quiet = false
	c.plans.Add(1)
	c.bal.draining = draining
	var sizes map[PartitionKey]int64
	if cfg.LocalSizes != nil {
		sizes = cfg.LocalSizes()
	}
	parts, v := c.store.BalanceView(draining, sizes, cfg.MaxMoves, cfg.Skew)
	plan := PlanBalance(parts, v)
	pass := BalancePass{Plan: plan, Started: map[MoveKind]int{}}
	inFlight := map[PartitionKey]bool{}
	for _, st := range parts {
		k := PartitionKey{st.Topic, st.Partition}
		if st.Reassigning() {
			inFlight[k] = true
		} else if c.bal.inFlight[k] {
			pass.Finished++
		}
	}
	now := time.Now()
	switch {
	case !plan.Balanced() && c.bal.unbalancedFrom.IsZero():
		c.bal.unbalancedFrom = now
		c.log.Info("balancer: cluster unbalanced", "skew", plan.Skew(), "in_flight", plan.InFlight, "moves", len(plan.Moves),
			"pending", plan.Pending, "draining", sortedIDs(draining))
	case plan.Balanced() && !c.bal.unbalancedFrom.IsZero():
		pass.BalancedAfter = now.Sub(c.bal.unbalancedFrom)
		c.bal.unbalancedFrom = time.Time{}
		c.log.Info("balancer: cluster balanced", "took", pass.BalancedAfter, "skew", plan.Skew(), "draining", sortedIDs(draining))
	}
	for _, why := range plan.Blocked {
		c.log.Warn("balancer: drain blocked", "reason", why)
	}
	written := map[PartitionKey]bool{}
	for _, m := range plan.Moves {
		k := PartitionKey{m.Topic, m.Partition}
		if written[k] {
			continue // a partition with two draining replicas: one reassignment
		}
		if !c.leading.Load() || time.Since(c.renewedAt) > c.cfg.LeaseTTL/2 {
			break // the lease may have lapsed: the next pass decides again
		}
		live := LiveFor(m.State, func(b int32) bool { return c.store.Live(b) && !draining[b] }, v.Offline)
		var d Decision
		if m.Kind == MoveLeader {
			next := m.State.clone()
			next.Leader = m.To
			d = finish(m.State, next)
		} else {
			d = StartReassignment(m.State, m.Replicas, live)
		}
		next, err := FenceController(m.State, d.State, c.epoch)
		if err == nil {
			uctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
			_, err = c.store.UpdatePartition(uctx, next)
			cancel()
			if err != nil && !errors.Is(err, ErrConflict) {
				// No answer is not no write: a move that landed is
				// started, and reported as such.
				lctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
				if _, ok := c.store.Landed(lctx, next); ok {
					err = nil
				}
				cancel()
			}
		}
		switch {
		case err == nil:
			written[k] = true
			pass.Started[m.Kind]++
			if m.Kind != MoveLeader {
				pass.StartedBytes += max(m.Bytes, 0)
				if next.Reassigning() {
					inFlight[k] = true
				}
			}
			c.log.Info("balancer: move", "kind", string(m.Kind), "topic", m.Topic, "partition", m.Partition, "from", m.From, "to", m.To,
				"replicas", m.State.Replicas, "target", m.Replicas, "bytes", m.Bytes, "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
		case errors.Is(err, ErrControllerFenced):
			c.log.Warn("deposed: a newer controller wrote a partition", "topic", m.Topic, "partition", m.Partition,
				"controller_epoch", c.epoch, "partition_controller_epoch", m.State.ControllerEpoch)
			c.leading.Store(false)
			c.bal.inFlight = inFlight
			return len(written) > 0
		case errors.Is(err, ErrConflict):
			// Someone wrote first: the next pass decides on the fresh record.
		default:
			c.log.Warn("balancer: move", "topic", m.Topic, "partition", m.Partition, "err", err)
		}
	}
	c.bal.inFlight = inFlight
	c.bal.quiet, c.bal.quietGen, c.bal.plan = len(plan.Moves) == 0, gen, plan
	if cfg.OnPass != nil {
		cfg.OnPass(pass)
	}
	// Leadership follows the preferred replicas the pass placed, and those
	// of reassignments that completed, without waiting for the next
	// leader-imbalance check.
	return len(written) > 0 || pass.Finished > 0 || !plan.Balanced()
}
