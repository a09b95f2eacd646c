package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/share"
)

// shareGroups is the node's KIP-932 share groups: the share group
// coordinator (membership) and the share-partition manager (ShareFetch,
// ShareAcknowledge) of the partitions this node leads. Package share owns
// them; this is the wiring.
type shareGroups struct {
	coord     *share.Coordinator
	parts     *share.Manager
	state     *share.StateCoordinator
	persister *share.KafkaPersister
}

func (n *Node) registerShareAPIs(reg *kafka.Registry) {
	cfg := share.Config{
		Limits: share.Limits{
			LockDurationMs: n.cfg.GroupShareRecordLockDuration.Milliseconds(),
			DeliveryLimit:  n.cfg.GroupShareDeliveryCountLimit,
			MaxInFlight:    n.cfg.GroupSharePartitionMaxRecordLocks,
		},
		SessionTimeoutMs:    int32(n.cfg.GroupShareSessionTimeout.Milliseconds()),
		HeartbeatIntervalMs: int32(n.cfg.GroupShareHeartbeatInterval.Milliseconds()),
		AutoOffsetReset:     n.cfg.ShareAutoOffsetReset,
		MaxSize:             n.cfg.GroupShareMaxSize,
		GroupConfig:         n.groupConfig,
		Authorizer:          n.authz,
		Logger:              n.logger,
	}
	var remote share.RemoteReader
	if n.cold != nil {
		remote = n.cold
	}
	state := share.NewStateCoordinator(n.authz, n.replicas, share.DefaultStatePartitions, 0)
	persister := share.NewKafkaPersister(func() []string { return []string{n.cfg.Advertise} }, share.DefaultStatePartitions,
		n.shareStateLeader, n.ensureShareStateTopic, n.interBroker.KgoOpts()...)
	cfg.EndOffsets = persister.EndOffsets // the lag of partitions led elsewhere
	parts := share.NewManager(cfg, n.replicas, directory{n.store}, remote, persister)
	n.share = &shareGroups{parts: parts, coord: share.NewCoordinator(cfg, shareCluster{n}, parts), state: state, persister: persister}
	n.share.coord.Register(reg)
	parts.Register(reg)
	state.Register(reg)
	// Share group membership lives in __consumer_offsets, which the group
	// coordinator owns: it appends the share coordinator's records and
	// hands them back when it loads a partition.
	n.share.coord.SetMembershipLog(shareMembershipLog{n.coords.groups, n.cfg.OffsetsTopicNumPartitions})
	n.coords.groups.SetShareGroups(shareGroupLister{n.share.coord}) // n.coords is built first (node.go)
	n.coords.groups.SetShareCoordinators(shareCoordinators{n})
}

// shareCoordinators answers FindCoordinator v6 key type 2: the leader of
// the key's __share_group_state partition, created on first use.
type shareCoordinators struct{ n *Node }

// FindShareCoordinator implements group.ShareCoordinators.
func (s shareCoordinators) FindShareCoordinator(ctx context.Context, key string) (coordinator.Broker, error) {
	k, err := share.ParseStateKey(key)
	if err != nil {
		return coordinator.Broker{}, fmt.Errorf("%w: %w", kerr.InvalidRequest, err)
	}
	p := share.StatePartitionFor(k, share.DefaultStatePartitions)
	cluster := coordinatorCluster{n: s.n, cs: s.n.coords}
	if b, ok := cluster.PartitionLeader(share.StateTopic, p); ok {
		return b, nil
	}
	if err := s.n.ensureShareStateTopic(ctx); err != nil {
		return coordinator.Broker{}, fmt.Errorf("%w: creating %s: %w", group.ErrCoordinatorNotAvailable, share.StateTopic, err)
	}
	if b, ok := cluster.PartitionLeader(share.StateTopic, p); ok {
		return b, nil
	}
	return coordinator.Broker{}, fmt.Errorf("%w: %s-%d has no leader", group.ErrCoordinatorNotAvailable, share.StateTopic, p)
}

// shareStateLeader is the node leading a __share_group_state partition.
func (n *Node) shareStateLeader(p int32) (int32, bool) {
	st, ok := n.store.Partition(share.StateTopic, p)
	if !ok || st.Leader < 0 {
		return -1, false
	}
	return st.Leader, true
}

// shareStateTopicShape is the shape the share coordinator needs of
// __share_group_state: share.DefaultStatePartitions partitions (keys map
// with that count), as many replicas as __consumer_offsets capped at the
// live brokers, compacted (Kafka makes it cleanup.policy=delete and prunes
// it with DeleteRecords below each key's latest snapshot; Shale writes
// only whole snapshots, so compaction keeps each key's latest, and
// DeleteRecords is refused on it as on every internal topic), the
// producer's compression and 100 MiB segments as Kafka's
// shareGroupStateTopicConfigs.
func (n *Node) shareStateTopicShape() coordinator.TopicShape {
	rf := min(int(n.cfg.OffsetsTopicReplicationFactor), max(len(n.store.Brokers()), 1))
	return coordinator.TopicShape{Partitions: share.DefaultStatePartitions, ReplicationFactor: int16(rf),
		Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}}
}

// ensureShareStateTopic creates __share_group_state with its shape unless
// it exists; an existing one of another shape is logged and, with another
// partition count, an error (admin's internal-topic rules, as for the
// other coordinators' topics).
func (n *Node) ensureShareStateTopic(ctx context.Context) error {
	if t, ok := n.store.Topic(share.StateTopic); ok && t.Partitions == share.DefaultStatePartitions {
		return nil
	}
	s := n.shareStateTopicShape()
	return n.apis.EnsureTopic(ctx, share.StateTopic, s.Partitions, s.ReplicationFactor, s.Configs)
}

// closeShare stops the share coordinator's expiry loop. Idempotent.
func (n *Node) closeShare() {
	if n.share != nil {
		n.share.coord.Close()
		n.share.persister.Close()
	}
}

// ShareGroups exposes the share group coordinator and manager (the CLI's
// admin HTTP views and tests).
func (n *Node) ShareGroups() (*share.Coordinator, *share.Manager) {
	if n.share == nil {
		return nil, nil
	}
	return n.share.coord, n.share.parts
}

// shareCluster is the cluster as the share coordinator sees it.
type shareCluster struct{ n *Node }

// IsCoordinator implements share.Cluster: the leader of the group's
// __consumer_offsets partition coordinates it, as for every group.
func (sc shareCluster) IsCoordinator(g string) bool {
	_, err := sc.n.replicas.Leader(group.OffsetsTopic, group.PartitionFor(g, sc.n.cfg.OffsetsTopicNumPartitions))
	return err == nil
}

// Topic implements share.Cluster.
func (sc shareCluster) Topic(name string) (share.TopicMeta, bool) {
	t, ok := sc.n.store.Topic(name)
	if !ok {
		return share.TopicMeta{}, false
	}
	return share.TopicMeta{ID: t.ID, Partitions: t.Partitions}, true
}

// shareGroupLister adapts the share coordinator to group.ShareGroups, so
// that ListGroups lists and DeleteGroups deletes share groups.
type shareGroupLister struct{ c *share.Coordinator }

func (l shareGroupLister) ListShareGroups() []group.ShareGroupListing {
	var out []group.ShareGroupListing
	for _, g := range l.c.ListShareGroups() {
		out = append(out, group.ShareGroupListing{ID: g.ID, State: g.State})
	}
	return out
}

func (l shareGroupLister) DeleteShareGroup(id string) (bool, bool, error) {
	return l.c.DeleteShareGroup(id)
}

func (l shareGroupLister) LoadShareGroups(p int32, groups map[string][]group.ShareRecord) {
	out := make(map[string][]share.LogRecord, len(groups))
	for id, recs := range groups {
		for _, r := range recs {
			out[id] = append(out[id], share.LogRecord(r))
		}
	}
	l.c.LoadGroups(p, out)
}

func (l shareGroupLister) UnloadShareGroups(p int32) { l.c.UnloadGroups(p) }

// shareMembershipLog is the group coordinator as the share coordinator's
// membership log (share.MembershipLog).
type shareMembershipLog struct {
	g          *group.Coordinator
	partitions int32
}

func (l shareMembershipLog) Append(ctx context.Context, id string, recs []share.LogRecord) error {
	out := make([]group.ShareRecord, len(recs))
	for i, r := range recs {
		out[i] = group.ShareRecord(r)
	}
	if err := l.g.AppendShareRecords(ctx, id, out); errors.Is(err, group.ErrNotShareGroup) {
		return fmt.Errorf("%w: %w", share.ErrNotShareGroup, err)
	} else if err != nil {
		return err
	}
	return nil
}

func (l shareMembershipLog) Ready(id string) error { return l.g.ShareReady(id) }

func (l shareMembershipLog) PartitionFor(id string) int32 {
	return group.PartitionFor(id, l.partitions)
}

// sharePartitionsHandler serves GET adminapi.SharePartitionsPath?group=G:
// the share-partitions of share group G that this node leads, with their
// in-flight counts (the CLI's `shale group describe` asks every node).
func (n *Node) sharePartitionsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		g := r.URL.Query().Get("group")
		if g == "" {
			http.Error(w, "name the share group: ?group=G", http.StatusBadRequest)
			return
		}
		out := adminapi.SharePartitions{NodeID: n.cfg.NodeID, Group: g, Partitions: []adminapi.SharePartition{}}
		if n.share != nil {
			for _, p := range n.share.parts.Lag(g) {
				out.Partitions = append(out.Partitions, adminapi.SharePartition{Topic: p.Topic, Partition: p.Partition,
					StartOffset: p.StartOffset, InFlight: p.InFlight, Acquired: p.Acquired, Available: p.Available, Lag: p.Lag})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
}
