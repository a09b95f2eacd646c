package tiering

import (
	"context"
	"errors"
	"path"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
)

// reconcilePartition brings a led partition's bucket prefix in line with its
// metadata: abandoned CopyStarted records (an upload cut off by a crash, a
// shutdown or a change of leader) are deleted with their objects,
// interrupted deletes are finished, and objects that no record references
// are deleted once older than the grace period (the grace covers an upload
// whose CopyStarted record this node's cache has not seen yet).
//
// A CopyStarted record is abandoned once it is older than the grace period,
// or at once when its leader epoch is below this leader's: its writer can
// never commit it (PutRemoteSegment fences CopyFinished by epoch), so it
// would only wait out the grace. An object such a writer still puts after
// the record is gone is unreferenced and goes after the grace.
//
// It returns whether it did all it had to: false when a request failed.
func (m *Manager) reconcilePartition(ctx context.Context, t target, prefix string, logger partLogger) (done bool) {
	now, done := m.now(), true
	for _, rec := range m.meta.ListRemoteSegments(t.id, t.rep.Partition()) {
		stale := rec.State == controlplane.CopyStarted && (now.Sub(rec.UpdatedAt) > m.cfg.OrphanGrace || rec.LeaderEpoch < t.epoch)
		if !stale && rec.State != controlplane.DeleteStarted && rec.State != controlplane.DeleteFinished {
			continue
		}
		if err := m.deleteRemote(ctx, t.epoch, rec); err != nil {
			logger.Warn("reconciler: removing an abandoned remote segment failed", "segment", rec.SegmentID, "err", err)
			done = false
			continue
		}
		if stale {
			logger.Info("reconciler: removed an abandoned upload", "segment", rec.SegmentID, "base_offset", rec.BaseOffset,
				"upload_leader_epoch", rec.LeaderEpoch, "leader_epoch", t.epoch)
		}
		m.stats.orphansDeleted.Add(1)
	}
	referenced := m.quarantinedObjects()
	for _, rec := range m.meta.ListRemoteSegments(t.id, t.rep.Partition()) {
		for _, k := range rec.Objects {
			referenced[k] = true
		}
	}
	var orphans []string
	err := m.bucket.List(ctx, prefix, func(a objstore.Attrs) error {
		// An object another topic lists (a fork's reference, or the
		// source's object a fork lists after the source let it go) is
		// not an orphan.
		if !referenced[a.Key] && now.Sub(a.LastModified) > m.cfg.OrphanGrace && len(m.meta.ObjectListedBy(a.Key)) == 0 {
			orphans = append(orphans, a.Key)
		}
		return nil
	})
	if err != nil {
		logger.Warn("reconciler: listing the bucket failed", "prefix", prefix, "err", err)
		return false
	}
	grace := deleteGrace(t.rep.Config())
	for _, k := range orphans {
		if err := m.removeObject(ctx, t.id, t.rep.Partition(), k, controlplane.ReasonOrphanObject, grace); err != nil {
			logger.Warn("reconciler: deleting an orphan failed", "key", k, "err", err)
			return false
		}
		if grace > 0 {
			logger.Info("reconciler: quarantined unreferenced object", "key", k)
		} else {
			logger.Info("reconciler: deleted unreferenced object", "key", k)
		}
		m.stats.orphansDeleted.Add(1)
	}
	return done
}

// cleanDeletedTopics removes the objects and records of topics that no
// longer exist (the controller's job), their log start records last. A
// re-created topic has a new id, so it never shares a record or a key
// prefix with the deleted one.
func (m *Manager) cleanDeletedTopics(ctx context.Context) {
	for _, id := range m.meta.RemoteTopicIDs() {
		if _, ok := m.cfg.Store.TopicByID(id); ok {
			continue
		}
		for _, p := range m.meta.RemotePartitions(id) {
			if err := m.cleanDeletedPartition(ctx, id, p); err != nil {
				m.log.Warn("cleaning a deleted topic's remote data failed", "topic_id", id.Hex(), "partition", p, "err", err)
			}
		}
	}
	for id, parts := range m.meta.LogStartPartitions() {
		if _, ok := m.cfg.Store.TopicByID(id); ok {
			continue
		}
		for _, p := range parts {
			if len(m.meta.ListRemoteSegments(id, p)) > 0 {
				continue // its segments first (a later pass)
			}
			if err := m.meta.DeleteRemoteLogStart(ctx, id, p); err != nil {
				m.log.Warn("removing a deleted topic's log start record failed", "topic_id", id.Hex(), "partition", p, "err", err)
				continue
			}
			m.stats.orphansDeleted.Add(1)
		}
	}
}

// RemovedBrokerTiers returns the node ids of the cold-tier records to
// remove: those of brokers that are neither live (registered) nor assigned
// a replica of any partition, other than self. A broker that is only down
// keeps its record while it still holds replicas; one that comes back
// records its tier again (Register, and every pass when its record is
// missing).
func RemovedBrokerTiers(tiers []controlplane.ColdTier, self int32, live []controlplane.Broker, assigned map[int32]bool) []int32 {
	alive := map[int32]bool{}
	for _, b := range live {
		alive[b.NodeID] = true
	}
	var out []int32
	for _, t := range tiers {
		if t.NodeID != self && !alive[t.NodeID] && !assigned[t.NodeID] {
			out = append(out, t.NodeID)
		}
	}
	return out
}

// cleanRemovedBrokerTiers removes the cold-tier records of brokers that
// left the cluster (the controller's job, on reconcile passes), so that a
// broker id gone for good no longer takes part in the cold-tier check.
func (m *Manager) cleanRemovedBrokerTiers(ctx context.Context) {
	assigned := map[int32]bool{}
	for _, top := range m.cfg.Store.Topics() {
		for _, ps := range m.cfg.Store.Partitions(top.Name) {
			for _, ids := range [][]int32{ps.Replicas, ps.AddingReplicas, ps.RemovingReplicas} {
				for _, id := range ids {
					assigned[id] = true
				}
			}
		}
	}
	for _, node := range RemovedBrokerTiers(m.meta.ColdTiers(), m.cfg.NodeID, m.cfg.Store.Brokers(), assigned) {
		if err := m.meta.DeleteColdTier(ctx, node); err != nil {
			m.log.Warn("removing the cold-tier record of a removed broker failed", "broker", node, "err", err)
			continue
		}
		m.log.Info("removed the cold-tier record of a broker that left the cluster", "broker", node)
	}
}

// cleanDeletedPartition removes a deleted topic's partition from the
// bucket: into quarantine for the broker-wide remote.delete.grace.ms (the
// topic's own config went with it), or deleted at once when that is 0.
func (m *Manager) cleanDeletedPartition(ctx context.Context, id controlplane.TopicID, p int32) error {
	grace := deleteGrace(config.ResolveTopic(nil, m.cfg.TopicDefaults))
	prefixes := map[string]bool{}
	for _, rec := range m.meta.ListRemoteSegments(id, p) {
		for _, k := range rec.Objects {
			prefixes[path.Dir(k)+"/"] = true
		}
		if grace > 0 && rec.State == controlplane.CopyFinished {
			now, seg := m.now(), rec
			e := controlplane.QuarantineEntry{TopicID: id, Partition: p, Reason: controlplane.ReasonTopicDeleted,
				Segment: &seg, QuarantinedAt: now, PurgeAfter: now.Add(grace)}
			if len(rec.Objects) > 0 {
				e.Topic = topicOfKey(rec.Objects[0], id)
			}
			if _, err := m.meta.QuarantineRemoteSegment(ctx, e, -1); err != nil && !errors.Is(err, controlplane.ErrConflict) {
				return err
			}
			m.stats.quarantined.Add(1)
			continue
		}
		if err := m.deleteObjects(ctx, id, rec.Objects); err != nil {
			return err
		}
		if err := m.meta.DeleteRemoteSegmentRecord(ctx, rec); err != nil && !errors.Is(err, controlplane.ErrConflict) {
			return err
		}
		m.stats.orphansDeleted.Add(1)
	}
	// Objects no record listed (a writer cut off mid-way): everything under
	// the partition's prefix belongs to the deleted topic id.
	quarantined := m.quarantinedObjects()
	for prefix := range prefixes {
		var keys []string
		if err := m.bucket.List(ctx, prefix, func(a objstore.Attrs) error {
			if !quarantined[a.Key] && len(m.meta.ObjectListedBy(a.Key)) == 0 {
				keys = append(keys, a.Key)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := m.removeObject(ctx, id, p, k, controlplane.ReasonTopicDeleted, grace); err != nil {
				return err
			}
		}
	}
	return nil
}
