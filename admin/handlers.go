// Package admin holds the node's metadata and admin Kafka APIs, one file
// per API named after it (Metadata, CreateTopics, DeleteTopics,
// CreatePartitions, DeleteRecords, DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs, ListConfigResources, ElectLeaders, the partition reassignments,
// DescribeCluster, DescribeLogDirs, DescribeTopicPartitions, UnregisterBroker, the
// delegation token APIs), and the wiring of the consumer group coordinator's
// and the transaction coordinator's APIs (packages group and txn own
// them). They combine the control plane with the
// local replicas: each reads and writes controlplane's metadata, then has
// the replica manager reconcile so that the node acts on the change before
// it answers (for at most reconcileWait; a larger change goes on in the
// background).
//
// admin sits above controlplane/, replica/, group/ and kafka/, and below
// broker/, which builds the Handlers with Register when a node starts.
package admin

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/replica"
	"github.com/shale-io/shale/tiering"
)

// Config is what the admin handlers act on.
type Config struct {
	// Broker is the node's validated config (its id, advertised address,
	// rack, topic defaults, auto-creation and default partition settings).
	Broker   config.Broker
	Store    *controlplane.Store
	Replicas *replica.Manager
	// Tiering is the node's tiering manager, nil when tiering is off:
	// DeleteRecords on a tiered topic commits the new log start to the
	// remote metadata first.
	Tiering *tiering.Manager
	// ControllerID returns the node holding the controller lease, as last seen.
	ControllerID func() int32
	// InternalTopicShapes are the shapes the node's coordinators need of
	// their internal topics (__consumer_offsets, __transaction_state), by
	// topic: CreateTopics, CreatePartitions and DeleteTopics keep them.
	InternalTopicShapes map[string]func() coordinator.TopicShape
	// SCRAM holds the SCRAM credentials (DescribeUserScramCredentials,
	// AlterUserScramCredentials); nil leaves those APIs unregistered.
	SCRAM *controlplane.SCRAMCredentials
	// DelegationTokens holds the delegation tokens (CreateDelegationToken,
	// RenewDelegationToken, ExpireDelegationToken, DescribeDelegationToken);
	// nil, or no delegation_token_secret_key, answers them
	// DELEGATION_TOKEN_AUTH_DISABLED.
	DelegationTokens *controlplane.DelegationTokens
	// Quotas holds the client quotas (DescribeClientQuotas,
	// AlterClientQuotas); nil leaves those APIs unregistered.
	Quotas *controlplane.ClientQuotas
	// Features holds the cluster's finalized feature levels
	// (UpdateFeatures); nil leaves UpdateFeatures unregistered.
	Features *controlplane.Features
	// ClientMetrics holds the client metrics subscriptions (KIP-714: the
	// CLIENT_METRICS config resources); nil refuses them INVALID_REQUEST.
	ClientMetrics *controlplane.ClientMetrics
	// GroupConfigs holds the group configs (KIP-848, KIP-932: the GROUP
	// config resources), checked with GroupConfigRules before they are
	// stored; nil refuses them INVALID_REQUEST.
	GroupConfigs     *controlplane.GroupConfigs
	GroupConfigRules coordinator.GroupConfigRules
	// Authorizer checks every API's ACLs; nil is the authorizer off.
	Authorizer *authz.Authorizer
	// ACLs stores the bindings (CreateAcls, DescribeAcls, DeleteAcls); nil
	// (the authorizer off) answers those APIs SECURITY_DISABLED.
	ACLs   *controlplane.ACLs
	Logger *slog.Logger
}

// Handlers serves the admin APIs of one node. Register builds it; its
// handlers are called concurrently by the Kafka server.
type Handlers struct {
	scram         *controlplane.SCRAMCredentials // nil: no SCRAM APIs
	quotas        *controlplane.ClientQuotas     // nil: no client quota APIs
	tokens        *controlplane.DelegationTokens // nil: delegation tokens off
	clientMetrics *controlplane.ClientMetrics    // nil: no CLIENT_METRICS resources
	groupConfigs  *controlplane.GroupConfigs     // nil: no GROUP resources
	groupRules    coordinator.GroupConfigRules
	authz         *authz.Authorizer  // nil: the authorizer off
	acls          *controlplane.ACLs // nil: the authorizer off
	cfg           config.Broker
	store         *controlplane.Store
	replicas      *replica.Manager
	tiering       *tiering.Manager // nil: tiering off
	controllerID  func() int32
	logger        *slog.Logger
	shapes        map[string]func() coordinator.TopicShape

	misshapen misshapenLog // internal topics of the wrong shape, logged
}

// Register registers the metadata and admin APIs in reg. The group and
// transaction APIs are their coordinators', which the node builds.
func Register(reg *kafka.Registry, cfg Config) *Handlers {
	h := &Handlers{cfg: cfg.Broker, store: cfg.Store, replicas: cfg.Replicas, tiering: cfg.Tiering, controllerID: cfg.ControllerID,
		authz: cfg.Authorizer, acls: cfg.ACLs, logger: cfg.Logger, shapes: cfg.InternalTopicShapes, clientMetrics: cfg.ClientMetrics, tokens: cfg.DelegationTokens,
		groupConfigs: cfg.GroupConfigs, groupRules: cfg.GroupConfigRules}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	reg.Register(kmsg.Metadata, 0, 13, h.handleMetadata)
	reg.Register(kmsg.CreateTopics, 0, 7, h.handleCreateTopics)
	reg.Register(kmsg.DeleteTopics, 0, 6, h.handleDeleteTopics)
	reg.Register(kmsg.CreatePartitions, 0, 3, h.handleCreatePartitions)
	reg.Register(kmsg.DescribeConfigs, 0, 4, h.handleDescribeConfigs)
	reg.Register(kmsg.AlterConfigs, 0, 2, h.handleAlterConfigs)
	reg.Register(kmsg.IncrementalAlterConfigs, 0, 1, h.handleIncrementalAlterConfigs)
	reg.Register(kmsg.DeleteRecords, 0, 2, h.handleDeleteRecords)
	reg.Register(kmsg.DescribeCluster, 0, 2, h.handleDescribeCluster)
	reg.Register(kmsg.DescribeLogDirs, 0, 5, h.handleDescribeLogDirs)
	reg.Register(kmsg.AlterReplicaLogDirs, 0, 2, h.handleAlterReplicaLogDirs)
	reg.Register(kmsg.DescribeTopicPartitions, 0, 0, h.handleDescribeTopicPartitions)
	reg.Register(kmsg.ListConfigResources, 0, 1, h.handleListConfigResources)
	reg.Register(kmsg.UnregisterBroker, 0, 0, h.handleUnregisterBroker)
	reg.Register(kmsg.ElectLeaders, 0, 2, h.handleElectLeaders)
	// kmsg spells key 45, Kafka's AlterPartitionReassignments, AlterPartitionAssignments.
	reg.Register(kmsg.AlterPartitionAssignments, 0, 1, h.handleAlterPartitionReassignments)
	reg.Register(kmsg.ListPartitionReassignments, 0, 0, h.handleListPartitionReassignments)
	reg.Register(kmsg.CreateDelegationToken, 0, 3, h.handleCreateDelegationToken)
	reg.Register(kmsg.RenewDelegationToken, 0, 2, h.handleRenewDelegationToken)
	reg.Register(kmsg.ExpireDelegationToken, 0, 2, h.handleExpireDelegationToken)
	reg.Register(kmsg.DescribeDelegationToken, 0, 3, h.handleDescribeDelegationToken)
	h.registerSCRAM(reg, cfg.SCRAM)
	h.registerClientQuotas(reg, cfg.Quotas)
	h.registerFeatures(reg, cfg.Features)
	h.registerACLAPIs(reg)
	return h
}

// reconcileWait bounds how long a handler waits for the replica manager to
// act on the change it committed before it answers.
const reconcileWait = 5 * time.Second

// reconcile has the replica manager act on a change just committed, and
// waits for it at most reconcileWait: a small change is acted on before the
// answer, as clients expect of this node; a large one (a topic of 10,000
// partitions is 20 s of opening on this machine) goes on in the background
// while the client gets its answer, as Kafka's controller answers
// CreateTopics once the change is committed, not once every replica is open.
// A client that waited past its request timeout would retry the request
// and be told the topic it just created exists. Partitions not open yet
// answer LEADER_NOT_AVAILABLE or NOT_LEADER, which clients retry.
func (h *Handlers) reconcile() {
	if !waitAtMost(reconcileWait, h.replicas.ReconcileOrLog) {
		h.logger.Info("answering before the replicas have all been opened; they open in the background", "waited", reconcileWait)
	}
}

// waitAtMost runs fn in a goroutine and waits for it at most d; it reports
// whether fn returned within d (if not, fn goes on).
func waitAtMost(d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
