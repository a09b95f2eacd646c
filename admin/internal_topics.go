package admin

// The internal topics, __consumer_offsets, __transaction_state and
// __share_group_state, are the group, transaction and share coordinators'
// state. Their shape is the
// coordinators' to choose, whoever creates them:
//
//   - Metadata auto-creation makes them with the coordinator's shape, as
//     Kafka's AutoTopicCreationManager does (a console consumer pointed at
//     __consumer_offsets on a fresh cluster used to make it with one
//     partition, one replica and delete retention).
//   - CreateTopics fills -1 partitions, replication factor and unnamed
//     configs in from the coordinator's shape and refuses another
//     partition count, fewer replicas or a cleanup.policy other than
//     compact with POLICY_VIOLATION. Kafka accepts any shape there; Shale
//     refuses what would leave most groups or transactional ids without a
//     coordinator, or their state to retention.
//   - AlterConfigs and IncrementalAlterConfigs that would leave their
//     cleanup.policy other than compact are POLICY_VIOLATION (Kafka accepts
//     them; delete retention removes committed offsets and transaction
//     state after retention.ms).
//   - DeleteRecords is INVALID_TOPIC_EXCEPTION, as Kafka's ReplicaManager
//     answers ("Cannot delete records of internal topic").
//   - DeleteTopics is allowed, as in Kafka (with Delete on the topic): the
//     coordinators' state is gone, and the next FindCoordinator makes the
//     topic again with their shape. It is how an operator replaces one of
//     the wrong shape.
//
// A coordinator that finds its topic existing with another shape (made by
// an older Shale) logs it at Error, naming what differs, at most once per
// misshapenLogInterval per topic, and the gauge
// shale_internal_topic_wrong_shape{topic} is 1 while it does; a partition count other than its own is
// COORDINATOR_NOT_AVAILABLE with that message for the keys it maps past
// the topic's partitions.

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/config"
)

// internalTopicShape is the shape the coordinator owning topic name needs
// of it, false for a topic that is not internal.
func (h *Handlers) internalTopicShape(name string) (coordinator.TopicShape, bool) {
	if shape := h.shapes[name]; shape != nil {
		return shape(), true
	}
	return coordinator.TopicShape{}, false
}

// internalTopicOwner names the setting that fixes an internal topic's
// partition count, for messages.
func internalTopicOwner(name string) string {
	switch name {
	case coordinator.TransactionStateTopic:
		return "the transaction coordinator (transaction.state.log.num.partitions)"
	case coordinator.ShareGroupStateTopic:
		return "the share coordinator (share.coordinator.state.topic.num.partitions)"
	}
	return "the group coordinator (offsets.topic.num.partitions)"
}

// errPolicyViolation marks a request the internal-topic rules refuse; it
// is answered POLICY_VIOLATION with its message.
var errPolicyViolation = fmt.Errorf("policy violation")

// internalCreate checks a CreateTopics entry for internal topic name, with
// its partitions and replication factor resolved (-1 is the shape's),
// against shape, and returns the configs to create it with: those named,
// over the shape's.
func (h *Handlers) internalCreate(name string, shape coordinator.TopicShape, parts int32, rf int16, configs map[string]string) (map[string]string, error) {
	if parts != shape.Partitions {
		return nil, fmt.Errorf("%w: %s must have %d partitions, the count %s maps its keys with; asked for %d",
			errPolicyViolation, name, shape.Partitions, internalTopicOwner(name), parts)
	}
	if rf < shape.ReplicationFactor {
		return nil, fmt.Errorf("%w: %s needs at least %d replicas (its replication factor setting, capped at the live brokers); asked for %d",
			errPolicyViolation, name, shape.ReplicationFactor, rf)
	}
	out := shape.Configs
	for k, v := range configs {
		out[k] = v
	}
	if err := h.internalConfigs(name, out); err != nil {
		return nil, err
	}
	return out, nil
}

// internalConfigs refuses explicit configs of internal topic name that
// resolve (with the broker defaults) to a cleanup.policy other than
// compact.
func (h *Handlers) internalConfigs(name string, configs map[string]string) error {
	policy, _, _ := config.ResolveTopic(configs, h.cfg.TopicDefaults).Get(config.CleanupPolicy)
	if policy != "compact" {
		return fmt.Errorf("%w: %s must keep cleanup.policy=compact (its coordinator's state would be deleted by retention); it would be %q",
			errPolicyViolation, name, policy)
	}
	return nil
}

// internalTopic reports whether name is one of the coordinators' topics.
func internalTopic(name string) bool {
	return name == coordinator.OffsetsTopic || name == coordinator.TransactionStateTopic || name == coordinator.ShareGroupStateTopic
}

// shapeMismatches says how existing topic t differs from shape, nil when
// it does not.
func (h *Handlers) shapeMismatches(t controlplane.Topic, shape coordinator.TopicShape) []string {
	var out []string
	if t.Partitions != shape.Partitions {
		out = append(out, fmt.Sprintf("%d partitions where %s maps keys to %d: keys past partition %d have no coordinator",
			t.Partitions, internalTopicOwner(t.Name), shape.Partitions, t.Partitions-1))
	}
	if t.ReplicationFactor < shape.ReplicationFactor {
		out = append(out, fmt.Sprintf("replication factor %d, below %d", t.ReplicationFactor, shape.ReplicationFactor))
	}
	if policy, _, _ := config.ResolveTopic(t.Configs, h.cfg.TopicDefaults).Get(config.CleanupPolicy); policy != "compact" {
		out = append(out, fmt.Sprintf("cleanup.policy=%s, not compact: retention deletes the coordinator's state", policy))
	}
	return out
}

// misshapenLogInterval is how often a misshapen internal topic is logged
// again, per topic.
const misshapenLogInterval = time.Minute

// misshapenLog rate-limits the Error line of a misshapen internal topic.
type misshapenLog struct {
	mu     sync.Mutex
	logged map[string]time.Time
}

func (m *misshapenLog) allow(topic string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.logged[topic]; ok && now.Sub(last) < misshapenLogInterval {
		return false
	}
	if m.logged == nil {
		m.logged = map[string]time.Time{}
	}
	m.logged[topic] = now
	return true
}

// checkInternalShape compares existing internal topic t with the shape its
// coordinator asked for, logs any difference at Error (rate-limited), and
// returns an error when the partition count differs: the coordinator then
// answers COORDINATOR_NOT_AVAILABLE with it.
func (h *Handlers) checkInternalShape(t controlplane.Topic, shape coordinator.TopicShape) error {
	bad := h.shapeMismatches(t, shape)
	if len(bad) == 0 {
		return nil
	}
	if h.misshapen.allow(t.Name, time.Now()) {
		h.logger.Error("internal topic has the wrong shape; delete it (DeleteTopics) for its coordinator to make it again, which loses its state",
			"topic", t.Name, "problems", strings.Join(bad, "; "))
	}
	if t.Partitions != shape.Partitions {
		return fmt.Errorf("%s has %s", t.Name, bad[0])
	}
	return nil
}

// InternalTopicsWrongShape reports each internal topic that exists: true
// when its shape is not the one its coordinator needs (shapeMismatches).
// For the node's metrics; safe for concurrent use.
func (h *Handlers) InternalTopicsWrongShape() map[string]bool {
	out := map[string]bool{}
	for _, name := range []string{coordinator.OffsetsTopic, coordinator.TransactionStateTopic, coordinator.ShareGroupStateTopic} {
		t, ok := h.store.Topic(name)
		if !ok {
			continue
		}
		shape, _ := h.internalTopicShape(name)
		out[name] = len(h.shapeMismatches(t, shape)) > 0
	}
	return out
}
