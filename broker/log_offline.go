package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// moveAwayFromOfflineLogs moves leadership away from every partition this
// node leads whose log has a sticky fsync error (partition.Replica.LogErr):
// such a log takes no more appends, so its producers get
// KAFKA_STORAGE_ERROR until another in-sync replica leads, which this does
// at once rather than at the next broker session expiry. As in a
// controlled shutdown, the node also leaves the ISR (unless it would empty
// it), and a partition without another live in-sync replica keeps its
// leader. The flush loop calls it.
func (n *Node) moveAwayFromOfflineLogs(ctx context.Context) {
	if n.store == nil || !segment.AnyFailed() {
		return
	}
	for _, rep := range n.replicas.All() {
		err := rep.LogErr()
		if err == nil || !rep.IsLeader() {
			continue
		}
		n.moveLeaderAway(ctx, rep, err)
	}
}

func (n *Node) moveLeaderAway(ctx context.Context, rep *partition.Replica, cause error) {
	live := map[int32]bool{}
	for _, b := range n.store.Brokers() {
		live[b.NodeID] = true
	}
	for attempt := 0; attempt < 3; attempt++ {
		st, ok := n.store.Partition(rep.Topic(), rep.Partition())
		if !ok || st.Leader != n.cfg.NodeID {
			return
		}
		d := controlplane.MoveLeaderAway(st, n.cfg.NodeID, func(b int32) bool { return live[b] }, 0) // an offline log joins no ELR
		if !d.Changed {
			return
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := n.store.UpdatePartition(uctx, d.State)
		cancel()
		if err == nil {
			n.logger.Error("log offline after an fsync failure; leadership moved away", "topic", rep.Topic(),
				"partition", rep.Partition(), "leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch, "err", cause)
			n.reconcile()
			return
		}
		if !errors.Is(err, controlplane.ErrConflict) {
			n.logger.Warn("moving leadership away from an offline log", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
			return
		}
	}
}

// offlineReport is the list of offline replicas this node last published.
type offlineReport struct {
	mu   sync.Mutex
	sent []controlplane.OfflineReplica
}

// reportOffline publishes the replicas this node cannot serve
// (replica.Manager.Offline: failed to open, or an offline log) in its
// registration when the list changed, so that the controller takes the
// node out of their ISRs and elects other leaders (controlplane.LiveFor),
// and reconciles so that no fetcher keeps following an offline log. Start
// and the flush loop call it; a failed write is made again at the next
// call.
func (n *Node) reportOffline(ctx context.Context) {
	if n.store == nil {
		return
	}
	var refs []controlplane.OfflineReplica
	for _, o := range n.replicas.Offline() {
		refs = append(refs, controlplane.OfflineReplica{TopicID: o.TopicID, Partition: o.Partition})
	}
	r := &n.offline
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Equal(refs, r.sent) {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := n.store.ReportOfflineReplicas(wctx, refs)
	cancel()
	if err != nil {
		n.logger.Warn("reporting offline replicas", "err", err)
		return
	}
	r.sent = refs
	n.logger.Warn("reported offline replicas", "count", len(refs))
	n.reconcile()
}
