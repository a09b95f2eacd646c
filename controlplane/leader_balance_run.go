package controlplane

import (
	"context"
	"errors"
	"time"
)

// balanceLeaders runs one preferred-leader pass (PlanPreferredLeaders) over
// every partition and writes its moves, each fenced by the controller
// epoch and by compare-and-set on the record it was decided from: a record
// that changed meanwhile is left for the next pass. It stops when the
// lease may have lapsed or a newer controller wrote. REQUIRES: called from
// the loop goroutine, as controller.
func (c *Controller) balanceLeaders(ctx context.Context) {
	var parts []PartitionState
	offline := map[int32][]OfflineReplica{}
	for _, t := range c.store.Topics() {
		parts = append(parts, c.store.Partitions(t.Name)...)
	}
	leaders := map[int32]bool{} // live, unfenced, not in controlled shutdown, not draining
	for _, b := range c.store.Brokers() {
		offline[b.NodeID] = c.store.OfflineReplicas(b.NodeID)
		leaders[b.NodeID] = !b.ControlledShutdown && !c.bal.draining[b.NodeID]
	}
	eligible := func(b int32) bool { return leaders[b] }
	plan := PlanPreferredLeaders(parts, LeaderBalanceView{
		Eligible:            eligible,
		Offline:             offline,
		ImbalancePercentage: c.cfg.LeaderImbalancePerBrokerPercentage,
	})
	for _, li := range plan.Imbalance {
		if li.NotLed > 0 {
			c.log.Debug("leader imbalance", "broker", li.Broker, "preferred", li.Preferred, "led_elsewhere", li.NotLed,
				"ratio", li.Ratio(), "leader.imbalance.per.broker.percentage", c.cfg.LeaderImbalancePerBrokerPercentage)
		}
	}
	if len(plan.Moves) == 0 {
		return
	}
	c.log.Info("preferred leader rebalance", "moves", len(plan.Moves))
	byPartition := map[[2]any]PartitionState{}
	for _, st := range parts {
		byPartition[[2]any{st.Topic, st.Partition}] = st
	}
	for _, d := range plan.Moves {
		if !c.leading.Load() || time.Since(c.renewedAt) > c.cfg.LeaseTTL/2 {
			return // the lease may have lapsed: the next pass decides again
		}
		st := byPartition[[2]any{d.State.Topic, d.State.Partition}]
		next, err := FenceController(st, d.State, c.epoch)
		if err == nil {
			uctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
			_, err = c.store.UpdatePartition(uctx, next)
			cancel()
		}
		switch {
		case err == nil:
			c.log.Info("moved leadership to the preferred replica", "topic", st.Topic, "partition", st.Partition,
				"from", st.Leader, "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
		case errors.Is(err, ErrControllerFenced):
			c.log.Warn("deposed: a newer controller wrote a partition", "topic", st.Topic, "partition", st.Partition,
				"controller_epoch", c.epoch, "partition_controller_epoch", st.ControllerEpoch)
			c.leading.Store(false)
			return
		case errors.Is(err, ErrConflict):
			// Someone wrote first: the next pass decides on the fresh record.
		default:
			c.log.Warn("moving leadership to the preferred replica", "topic", st.Topic, "partition", st.Partition, "err", err)
		}
	}
}
