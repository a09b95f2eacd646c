package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
)

// sessionLoop enforces the rule that a leader steps down only when the
// control plane has moved on without it (docs/replication.md, "When the
// control plane is away"): never because requests to NATS failed or the
// connection dropped, which a JetStream leader election or a lost NATS
// server causes for everyone, and never while the whole control plane is
// away (nobody can elect another leader then). Its registration must have
// certainly expired, by this node's monotonic clock from when its last
// successful renewal was sent (a NATS server that accepts the connection
// but has lost its cluster takes no write either), and the followers that
// could replace it must have stopped fetching from it
// (replica.Manager.StepDownSilent). It resumes, and reconciles with the
// control plane's view, once the registration is renewed.
//
// While the registration is fresh the loop looks again only when it could
// first have expired (each renewal moves that on), not on a fixed tick: an
// idle node's wake-ups are what its idle CPU is made of (issue 23). While
// it has expired, or the node has stepped down, it looks every
// sessionPoll.
func (n *Node) sessionLoop(ctx context.Context) {
	stepped := false
	session := n.cfg.BrokerSessionTimeout
	t := time.NewTimer(sessionPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		renewed, _ := n.store.RegistrationRenewed()
		expired := sessionExpired(now, renewed, session)
		switch {
		case expired && n.replicas.StepDownSilent(now, session) && !stepped:
			n.logger.Warn("control plane lost for longer than the broker session; stepping down",
				"connected", n.nc.IsConnected(), "registration_renewed_ago", now.Sub(renewed).Round(time.Millisecond))
			stepped = true
		case !expired && stepped:
			n.logger.Info("control plane reachable again; reconciling")
			n.replicas.Resume()
			n.reconcile()
			stepped = false
		}
		t.Reset(nextSessionLook(now, renewed, session, expired || stepped))
	}
}

// sessionPoll is how often sessionLoop looks while the registration has
// expired or the node has stepped down.
const sessionPoll = 250 * time.Millisecond

// nextSessionLook is how long after now sessionLoop looks again: at the
// moment a registration renewed at renewed could first have expired (just
// past renewed+session), or after sessionPoll while it has expired or the
// node is stepped down (waiting) or the wait would be shorter.
func nextSessionLook(now, renewed time.Time, session time.Duration, waiting bool) time.Duration {
	if waiting {
		return sessionPoll
	}
	return max(renewed.Add(session).Sub(now)+time.Millisecond, sessionPoll)
}

// sessionExpired reports whether this node's registration, last renewed by
// a write sent at renewed (zero: never), has certainly expired at now:
// more than the broker session ago. Both times carry the monotonic clock
// (time.Now), so a wall-clock step changes nothing.
func sessionExpired(now, renewed time.Time, session time.Duration) bool {
	return now.Sub(renewed) > session
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
	// Each led partition's move is one compare-and-set round trip, up to
	// shutdownWrites of them at once: one after another, a node leading a
	// third of 1,000 partitions spent the whole 5 s bound on them.
	sem := make(chan struct{}, shutdownWrites)
	var wg sync.WaitGroup
	for _, t := range n.store.Topics() {
		minISR := int(n.replicas.TopicConfig(t).Int64(config.MinInsyncReplicas))
		for _, st := range n.store.Partitions(t.Name) {
			if st.Leader != n.cfg.NodeID || len(st.Replicas) < 2 {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				n.shutdownMove(t.Name, st, isLive, minISR, deadline)
			})
		}
	}
	wg.Wait()
	n.reconcile()
}

// shutdownWrites bounds the leadership moves a controlled shutdown has in
// flight.
const shutdownWrites = 32

// shutdownMove moves the leadership of st (led by this node) to another
// live in-sync replica by compare-and-set, retrying a lost one on the
// fresh state, until deadline.
func (n *Node) shutdownMove(topic string, st controlplane.PartitionState, isLive func(int32) bool, minISR int, deadline time.Time) {
	for attempt := 0; attempt < 5 && time.Now().Before(deadline); attempt++ {
		d := controlplane.MoveLeaderAway(st, n.cfg.NodeID, isLive, minISR)
		if !d.Changed {
			return
		}
		uctx, cancel := context.WithDeadline(context.Background(), deadline)
		_, err := n.store.UpdatePartition(uctx, d.State)
		cancel()
		if err == nil {
			n.logger.Info("controlled shutdown moved leadership", "topic", topic, "partition", st.Partition,
				"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch)
			return
		}
		if !errors.Is(err, controlplane.ErrConflict) {
			n.logger.Warn("controlled shutdown", "topic", topic, "partition", st.Partition, "err", err)
			return
		}
		fresh, ok := n.store.Partition(topic, st.Partition)
		if !ok || fresh.Leader != n.cfg.NodeID || slices.Equal(fresh.Replicas, []int32{n.cfg.NodeID}) {
			return
		}
		st = fresh
	}
}
