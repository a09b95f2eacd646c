package broker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/replica"
	"github.com/shale-io/shale/txn"
)

// groupMinSessionTimeout is group.min.session.timeout.ms. Kafka's default
// is 6 s; Shale accepts sessions from 1 s so that tests and latency-minded
// deployments can detect a dead consumer sooner. Not configurable yet.
const groupMinSessionTimeout = time.Second

// coordinators are the node's group and transaction coordinators, both on
// the coordinator runtime, which the node builds and stops (the
// composition root; admin only serves their internal topics' shapes).
type coordinators struct {
	groups     *group.Coordinator
	txns       *txn.Coordinator
	txnMarkers *txn.KafkaMarkers
	stopGroups sync.Once
	stopTxns   sync.Once
	// unwatchTopics ends the group coordinator's subscription to topic
	// deletions (StopGroups).
	unwatchTopics func()
}

// buildCoordinators builds the group coordinator (package group owns its
// APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups, ConsumerGroupHeartbeat, ConsumerGroupDescribe) and the
// transaction coordinator (package txn: AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions;
// InitProducerId is ingest's and calls it), has FindCoordinator answer
// transactional ids with it, and serves the partition leader's side:
// WriteTxnMarkers and DescribeProducers. The marker sender dials this
// node's own inter-broker listener (with the inter-broker TLS and SASL)
// and finds the partition leaders from the cluster's metadata.
//
// The coordinators' internal topics are created through the admin
// handlers (n.apis), which must be set before the first request.
func (n *Node) buildCoordinators(reg *kafka.Registry) *coordinators {
	cs := &coordinators{}
	cluster := coordinatorCluster{n: n, cs: cs}
	cs.groups = group.New(group.Config{
		Partitions:                    n.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor:             n.cfg.OffsetsTopicReplicationFactor,
		MinSessionTimeout:             groupMinSessionTimeout,
		ConsumerSessionTimeout:        n.cfg.GroupConsumerSessionTimeout,
		OffsetsRetention:              n.cfg.OffsetsRetention,
		OffsetsRetentionCheckInterval: n.cfg.OffsetsRetentionCheckInterval,
		ConsumerHeartbeatInterval:     n.cfg.GroupConsumerHeartbeatInterval,
		ConsumerMigrationPolicy:       n.cfg.GroupConsumerMigrationPolicy,
		ConsumerMaxSize:               n.cfg.GroupConsumerMaxSize,
		GroupConfig:                   n.groupConfig,
		DeleteGroupConfigs:            n.deleteGroupConfigs,
		NodeID:                        n.cfg.NodeID,
		Logger:                        n.logger,
		Authorizer:                    n.authz,
	}, n.replicas, cluster)
	cs.groups.Register(reg)
	// A deleted topic's committed offsets are deleted with it, as Kafka's
	// coordinator does (group/deleted_topics.go).
	cs.unwatchTopics = n.store.Subscribe(func(ev controlplane.Event) {
		if ev.Kind == controlplane.TopicDeleted {
			cs.groups.TopicDeleted(ev.Topic.Name, ev.Topic.ID)
		}
	})

	dialer := n.interBroker
	if dialer == nil {
		dialer = interbroker.Plaintext()
	}
	cs.txnMarkers = txn.NewKafkaMarkers(func() []string { return []string{n.cfg.Advertise} }, dialer.KgoOpts()...)
	cs.txns = txn.New(txn.Config{
		Partitions:         n.cfg.TransactionStateLogNumPartitions,
		ReplicationFactor:  n.cfg.TransactionStateLogReplicationFactor,
		MinISR:             n.cfg.TransactionStateLogMinISR,
		TransactionVersion: n.cfg.TransactionVersion,
		MaxTimeout:         n.cfg.TransactionMaxTimeout,
		AbortCheckInterval: n.cfg.TransactionAbortCheckInterval,
		IDExpiration:       n.cfg.TransactionalIDExpiration,
		NodeID:             n.cfg.NodeID,
		Logger:             n.logger,
		Authorizer:         n.authz,

		IDExpirationCheckInterval: n.cfg.TransactionIDExpirationCheckInterval,
	}, n.replicas, cluster, n.pids, cs.txnMarkers)
	cs.txns.Register(reg)
	cs.groups.SetTransactions(cs.txns)
	cs.groups.SetTxnPartitionAdder(n.txnVerifier(cs))
	txn.RegisterWriteTxnMarkers(reg, txn.ReplicaMarkers{Leaders: n.replicas}, cs.groups, n.authz)
	txn.RegisterDescribeProducers(reg, n.replicas, n.authz)
	return cs
}

// internalTopicShapes are the shapes the coordinators need of their
// internal topics, for the admin handlers to keep (CreateTopics,
// CreatePartitions, DeleteTopics on them).
func (cs *coordinators) internalTopicShapes() map[string]func() coordinator.TopicShape {
	return map[string]func() coordinator.TopicShape{
		group.OffsetsTopic: cs.groups.OffsetsTopicShape,
		txn.StateTopic:     cs.txns.StateTopicShape,
	}
}

// txnVerifier is the partition leader's check of KIP-890 part 1 that
// Produce asks before the first batch of a transaction in a partition.
func (n *Node) txnVerifier(cs *coordinators) txn.Verifier {
	return txn.Verifier{Client: cs.txnMarkers, Coordinator: func(id string) (int32, bool) {
		// The coordinator's own partition count, not the topic's: a topic
		// of another shape (admin/internal_topics.go) must not send the
		// check to a broker that is not the id's coordinator.
		st, ok := n.store.Partition(txn.StateTopic, txn.PartitionFor(id, n.cfg.TransactionStateLogNumPartitions))
		return st.Leader, ok && st.Leader >= 0
	}}
}

// LeadershipChanged passes a change of this node's role for a partition
// to the coordinator of its internal topic (__consumer_offsets to the
// group coordinator, __transaction_state to the transaction coordinator),
// whose runtime loads the partition at once when this node leads it and
// unloads it when it does not, as Kafka's coordinators do on election and
// resignation. Other topics are ignored. It never blocks on I/O.
func (cs *coordinators) LeadershipChanged(topic string, p int32) {
	switch topic {
	case group.OffsetsTopic:
		cs.groups.LeadershipChanged(p)
	case txn.StateTopic:
		cs.txns.LeadershipChanged(p)
	}
}

// The coordinators' runtimes pass over partitions whose slot is settled
// when their Leaders can name local replicas (coordinator.Runtime.LoadLed).
var _ coordinator.LocalReplicas = (*replica.Manager)(nil)

// LoadLed starts loading every coordinator partition this node leads
// already: the roles applied before LeadershipChanged was wired.
func (cs *coordinators) LoadLed() {
	cs.groups.LoadLed()
	cs.txns.LoadLed()
}

// StopGroups stops the group coordinator: held JoinGroup and SyncGroup
// requests are answered NOT_COORDINATOR at once, so that a graceful
// shutdown does not wait out a rebalance. The node's Close calls it
// before the Kafka server's Shutdown. Idempotent.
func (cs *coordinators) StopGroups() {
	cs.stopGroups.Do(func() {
		cs.unwatchTopics()
		cs.groups.Close()
	})
}

// StopTransactions stops the transaction coordinator's marker senders and
// its timeout loop, then closes its client. Idempotent.
func (cs *coordinators) StopTransactions() {
	cs.stopTxns.Do(func() {
		cs.txns.Close()
		cs.txnMarkers.Close()
	})
}

// coordinatorCluster is the control plane as the coordinators see it
// (coordinator.Cluster, group.TopicLister, txn.Cluster).
type coordinatorCluster struct {
	n  *Node
	cs *coordinators
}

// EnsureTopic implements coordinator.Cluster through the admin handlers,
// which compare an existing internal topic with the shape asked for.
func (c coordinatorCluster) EnsureTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	return c.n.apis.EnsureTopic(ctx, name, partitions, rf, configs)
}

// LiveBrokers implements coordinator.Cluster.
func (c coordinatorCluster) LiveBrokers() int { return len(c.n.store.Brokers()) }

// PartitionLeader implements coordinator.Cluster.
func (c coordinatorCluster) PartitionLeader(topic string, p int32) (coordinator.Broker, bool) {
	st, ok := c.n.store.Partition(topic, p)
	if !ok || st.Leader < 0 {
		return coordinator.Broker{}, false
	}
	for _, b := range c.n.store.Brokers() {
		if b.NodeID == st.Leader {
			return coordinator.Broker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Listeners: b.Listeners}, true
		}
	}
	return coordinator.Broker{}, false
}

// Partitions implements txn.Cluster.
func (c coordinatorCluster) Partitions(topic string) (int32, bool) {
	t, ok := c.n.store.Topic(topic)
	return t.Partitions, ok
}

// EnsureOffsetsTopic implements txn.Cluster with the group coordinator's
// own creation of __consumer_offsets.
func (c coordinatorCluster) EnsureOffsetsTopic(ctx context.Context) (int32, error) {
	return c.cs.groups.EnsureOffsetsTopic(ctx)
}

// TopicsMeta implements group.TopicLister: every live topic with its id,
// partition count and, when some broker names a rack, its partitions'
// replica racks (for the rack-aware consumer group assignors).
func (c coordinatorCluster) TopicsMeta() []group.TopicMeta {
	store := c.n.store
	racks := map[int32]string{}
	for _, b := range store.Brokers() {
		if b.Rack != "" {
			racks[b.NodeID] = b.Rack
		}
	}
	topics := store.Topics()
	out := make([]group.TopicMeta, 0, len(topics))
	for _, t := range topics {
		tm := group.TopicMeta{Name: t.Name, ID: t.ID, Partitions: t.Partitions}
		if len(racks) > 0 {
			tm.Racks = make([][]string, t.Partitions)
			for _, st := range store.Partitions(t.Name) {
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
