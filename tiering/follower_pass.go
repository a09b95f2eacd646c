package tiering

import (
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// followerPass gives a replica this node does not lead its partition's
// remote state, from the metadata the leader commits, and applies local
// retention: a follower's local segments go once the leader's uploads cover
// them and they are past local retention, as on the leader, so followers
// too keep only the hot tail (KIP-405). Followers never upload or delete
// remote data.
//
// Pass n passes over a replica whose last visit settled and whose inputs
// are the same (quiet.go).
func (m *Manager) followerPass(rep *partition.Replica, n uint64) {
	if !rep.Config().Bool(config.RemoteStorageEnable) {
		return
	}
	top, ok := m.cfg.Store.TopicShared(rep.Topic()) // read only
	if !ok || (top.Internal && !TieredInternal(top.Name, rep.Config())) {
		return
	}
	st, ok := m.cfg.Store.PartitionShared(rep.Topic(), rep.Partition()) // read only
	if !ok || st.Leader == m.cfg.NodeID {
		return // led here: partitionPass's (or not yet known)
	}
	in := m.inputs(rep, top.ID, false)
	if quiet, _ := m.look(rep, in, n); quiet {
		m.stats.passedOver.Add(1)
		return
	}
	m.applyLogStart(rep, top.ID) // DeleteRecords on the leader
	remote := m.meta.ListRemoteSegments(top.ID, rep.Partition())
	local := rep.Log().Segments()
	rep.SetRemoteState(partition.RemoteState{LogStart: remoteStart(remote, m.recordedStart(top.ID, rep.Partition())),
		CopiedNext: CopiedNext(local, remote, rep.Log().Epochs())})
	if err := rep.ApplyRetention(m.now()); err != nil {
		m.log.Warn("follower local retention failed", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
		return
	}
	m.settled(rep, in, retentionDue(local, remote, in.cfg))
}
