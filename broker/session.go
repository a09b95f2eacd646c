package broker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
)

// sessionLoop enforces the rule that a node cut off from the control plane
// for longer than its broker session stops acting as leader: the controller
// will have elected others by then. Cut off means the NATS connection is
// down, or the node's own registration has not been renewed (a NATS server
// that stays connected but has lost its cluster, as an embedded server in
// cluster mode cut from its routes does, accepts the connection but not
// the write). It resumes, and reconciles with the control plane's view,
// once both are back.
func (n *Node) sessionLoop(ctx context.Context) {
	var downSince time.Time
	stepped := false
	every(ctx, 250*time.Millisecond, func() {
		now := time.Now()
		if !n.nc.IsConnected() {
			if downSince.IsZero() {
				downSince = now
			}
		} else {
			downSince = time.Time{}
		}
		renewed, _ := n.store.RegistrationRenewed()
		lost := sessionLost(now, downSince, renewed, n.cfg.BrokerSessionTimeout)
		switch {
		case lost && !stepped:
			n.logger.Warn("control plane lost for longer than the broker session; stepping down",
				"connected", downSince.IsZero(), "registration_renewed_ago", now.Sub(renewed).Round(time.Millisecond))
			n.replicas.StepDown()
			stepped = true
		case !lost && stepped:
			n.logger.Info("control plane reachable again; reconciling")
			n.replicas.Resume()
			n.reconcile()
			stepped = false
		}
	})
}

// sessionLost reports whether the node must stop acting as leader at now:
// its NATS connection has been down since downSince (zero: connected), or
// its registration was last renewed at renewed, longer than the broker
// session ago.
func sessionLost(now, downSince, renewed time.Time, session time.Duration) bool {
	return (!downSince.IsZero() && now.Sub(downSince) > session) || now.Sub(renewed) > session
}

// controlledShutdown moves leadership of this node's partitions to other
// in-sync replicas before it stops (Kafka's controlled shutdown), by
// compare-and-set on each partition record, and waits a bounded time for it
// to take effect. Partitions with no other live in-sync replica keep their
// leader: a clean stop never takes a partition offline.
func (n *Node) controlledShutdown(ctx context.Context) {
	if n.store == nil || n.replicas == nil {
		return
	}
	live := map[int32]bool{}
	for _, b := range n.store.Brokers() {
		live[b.NodeID] = true
	}
	isLive := func(b int32) bool { return live[b] }
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	mctx, cancel := context.WithDeadline(context.Background(), deadline)
	if err := n.store.BeginControlledShutdown(mctx); err != nil {
		// The balancer may then hand a leadership back before the node
		// stops; the node's stop moves it again (the session ends).
		n.logger.Warn("marking controlled shutdown", "err", err)
	}
	cancel()
	for _, t := range n.store.Topics() {
		for _, st := range n.store.Partitions(t.Name) {
			if st.Leader != n.cfg.NodeID || len(st.Replicas) < 2 {
				continue
			}
			for attempt := 0; attempt < 5 && time.Now().Before(deadline); attempt++ {
				d := controlplane.MoveLeaderAway(st, n.cfg.NodeID, isLive, int(n.replicas.TopicConfig(t).Int64(config.MinInsyncReplicas)))
				if !d.Changed {
					break
				}
				uctx, cancel := context.WithDeadline(context.Background(), deadline)
				_, err := n.store.UpdatePartition(uctx, d.State)
				cancel()
				if err == nil {
					n.logger.Info("controlled shutdown moved leadership", "topic", t.Name, "partition", st.Partition,
						"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch)
					break
				}
				if !errors.Is(err, controlplane.ErrConflict) {
					n.logger.Warn("controlled shutdown", "topic", t.Name, "partition", st.Partition, "err", err)
					break
				}
				fresh, ok := n.store.Partition(t.Name, st.Partition)
				if !ok || fresh.Leader != n.cfg.NodeID || slices.Equal(fresh.Replicas, []int32{n.cfg.NodeID}) {
					break
				}
				st = fresh
			}
		}
	}
	n.reconcile()
}
