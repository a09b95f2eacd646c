package broker

import (
	"context"
	"errors"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/partition"
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
	if n.store == nil {
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
		d := controlplane.MoveLeaderAway(st, n.cfg.NodeID, func(b int32) bool { return live[b] })
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
