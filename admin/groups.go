package admin

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/kafka"
)

// groupMinSessionTimeout is group.min.session.timeout.ms. Kafka's default
// is 6 s; Shale accepts sessions from 1 s so that tests and latency-minded
// deployments can detect a dead consumer sooner. Not configurable yet.
const groupMinSessionTimeout = time.Second

// registerGroupAPIs registers the consumer group coordinator's APIs
// (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups). The group package owns them; this is the wiring.
//
// The coordinator owns no goroutine beyond the lifetime of the
// __consumer_offsets replicas it serves: its groups stop when their
// partition's replica closes (which the node's Close does last), so it
// needs no place in the node's shutdown order beyond StopGroups.
func (h *Handlers) registerGroupAPIs(reg *kafka.Registry) {
	h.groups = group.New(group.Config{
		Partitions:                h.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor:         h.cfg.OffsetsTopicReplicationFactor,
		MinSessionTimeout:         groupMinSessionTimeout,
		ConsumerSessionTimeout:    h.cfg.GroupConsumerSessionTimeout,
		ConsumerHeartbeatInterval: h.cfg.GroupConsumerHeartbeatInterval,
		NodeID:                    h.cfg.NodeID,
		Logger:                    h.logger,
		Authorizer:                h.authz,
	}, h.replicas, groupCluster{h})
	h.groups.Register(reg)
}

// StopGroups stops the group coordinator: held JoinGroup and SyncGroup
// requests are answered NOT_COORDINATOR at once, so that a graceful
// shutdown does not wait out a rebalance. The node's Close should call it
// before the Kafka server's Shutdown; without that call the groups stop
// when the replicas close, and a held join delays the shutdown until its
// context ends. Idempotent.
func (h *Handlers) StopGroups() {
	h.stopGroups.Do(h.groups.Close)
}

// groupCluster is the control plane as the group coordinator sees it.
type groupCluster struct{ h *Handlers }

// EnsureTopic implements coordinator.Cluster. A coordinator's topic that exists
// already is compared with the shape asked for (checkInternalShape): any
// difference is logged, and another partition count is an error.
func (gc groupCluster) EnsureTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	if _, err := gc.h.store.CreateTopic(ctx, name, partitions, rf, configs); err != nil && !errors.Is(err, controlplane.ErrTopicExists) {
		return err
	}
	gc.h.reconcile()
	if t, ok := gc.h.store.Topic(name); ok && internalTopic(name) {
		return gc.h.checkInternalShape(t, coordinator.TopicShape{Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	}
	return nil
}

// LiveBrokers implements coordinator.Cluster.
func (gc groupCluster) LiveBrokers() int { return len(gc.h.store.Brokers()) }

// PartitionLeader implements coordinator.Cluster.
func (gc groupCluster) PartitionLeader(topic string, p int32) (coordinator.Broker, bool) {
	st, ok := gc.h.store.Partition(topic, p)
	if !ok || st.Leader < 0 {
		return coordinator.Broker{}, false
	}
	for _, b := range gc.h.store.Brokers() {
		if b.NodeID == st.Leader {
			return coordinator.Broker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Listeners: b.Listeners}, true
		}
	}
	return coordinator.Broker{}, false
}

// TopicsMeta implements group.TopicLister: every live topic with its id,
// partition count and, when some broker names a rack, its partitions'
// replica racks (for the rack-aware consumer group assignors).
func (gc groupCluster) TopicsMeta() []group.TopicMeta {
	racks := map[int32]string{}
	for _, b := range gc.h.store.Brokers() {
		if b.Rack != "" {
			racks[b.NodeID] = b.Rack
		}
	}
	topics := gc.h.store.Topics()
	out := make([]group.TopicMeta, 0, len(topics))
	for _, t := range topics {
		tm := group.TopicMeta{Name: t.Name, ID: t.ID, Partitions: t.Partitions}
		if len(racks) > 0 {
			tm.Racks = make([][]string, t.Partitions)
			for _, st := range gc.h.store.Partitions(t.Name) {
				if st.Partition < 0 || st.Partition >= t.Partitions {
					continue
				}
				for _, r := range st.Replicas {
					if rack, ok := racks[r]; ok && !slices.Contains(tm.Racks[st.Partition], rack) {
						tm.Racks[st.Partition] = append(tm.Racks[st.Partition], rack)
					}
				}
			}
		}
		out = append(out, tm)
	}
	return out
}
