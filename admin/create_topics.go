package admin

// CreateTopics (key 19), versions 0-7.
//
//   - v1: ValidateOnly, ErrorMessage.  v5: flexible versions; the response
//     carries the partition count, replication factor and effective configs.
//   - v4: -1 partitions / replication factor mean the broker defaults (KIP-464).
//   - v7: TopicID in the response.
//
// Configs are validated with Kafka's names before anything is written
// (INVALID_CONFIG). A manual replica assignment needs -1 partitions and
// replication factor (INVALID_REQUEST otherwise), partitions 0..n-1, and
// for each the same number of distinct registered brokers, fenced ones
// included, at least one of them live (INVALID_REPLICA_ASSIGNMENT
// otherwise, controlplane.ValidateAssignment); the partition's ISR is its
// live replicas.
// A name given twice in one request fails both entries.
//
// __consumer_offsets and __transaction_state are made only with their
// coordinator's shape: -1 partitions, replication factor and configs not
// named are the coordinator's; another partition count, fewer replicas or
// a cleanup.policy other than compact is POLICY_VIOLATION
// (internal_topics.go).
//
// With an authorizer, each topic needs Create on the cluster or on the
// topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleCreateTopics(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, t := range r.Topics {
		seen[t.Topic]++
	}
	clusterCreate := h.authz.Permits(req, acl.OpCreate, acl.Cluster)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
		fail := func(code int16, err error) {
			rt.ErrorCode, rt.ErrorMessage = code, errMessage(err)
			resp.Topics = append(resp.Topics, rt)
		}
		if seen[t.Topic] > 1 {
			fail(kerr.InvalidRequest.Code, fmt.Errorf("topic %q named more than once", t.Topic))
			continue
		}
		if !clusterCreate && !h.authz.Authorize(req, acl.OpCreate, acl.Topic(t.Topic)) {
			fail(kerr.TopicAuthorizationFailed.Code, nil)
			continue
		}
		assignment, code, aerr := manualAssignment(t)
		if aerr != nil {
			fail(code, aerr)
			continue
		}
		parts, rf := t.NumPartitions, t.ReplicationFactor
		if assignment != nil {
			parts, rf = int32(len(assignment)), int16(len(assignment[0]))
		}
		shape, internal := h.internalTopicShape(t.Topic)
		if internal && parts == -1 {
			parts = shape.Partitions
		}
		if internal && rf == -1 {
			rf = shape.ReplicationFactor
		}
		if parts == -1 {
			parts = h.cfg.NumPartitions
		}
		if rf == -1 {
			rf = h.cfg.DefaultReplicationFactor
		}
		if parts < 1 {
			fail(kerr.InvalidPartitions.Code, fmt.Errorf("%d partitions", parts))
			continue
		}
		if rf < 1 && assignment == nil {
			fail(kerr.InvalidReplicationFactor.Code, fmt.Errorf("replication factor %d", rf))
			continue
		}
		if err := controlplane.ValidateTopicName(t.Topic); err != nil {
			fail(adminErrorCode(err), err)
			continue
		}
		configs := map[string]string{}
		var cerr error
		for _, c := range t.Configs {
			if c.Value == nil {
				continue
			}
			if err := config.ValidateTopicValue(c.Name, *c.Value); err != nil {
				cerr = err
				break
			}
			configs[c.Name] = *c.Value
		}
		if cerr != nil {
			fail(kerr.InvalidConfig.Code, cerr)
			continue
		}
		if internal {
			if configs, cerr = h.internalCreate(t.Topic, shape, parts, rf, configs); cerr != nil {
				fail(kerr.PolicyViolation.Code, cerr)
				continue
			}
		}
		if r.ValidateOnly {
			if _, exists := h.store.Topic(t.Topic); exists {
				fail(kerr.TopicAlreadyExists.Code, fmt.Errorf("topic %q exists", t.Topic))
				continue
			}
			if assignment != nil {
				if err := controlplane.ValidateAssignment(assignment, int(rf), h.store.Registered, h.liveBrokers()); err != nil {
					fail(adminErrorCode(err), err)
					continue
				}
			} else if live := len(h.store.Brokers()); int(rf) > live {
				fail(kerr.InvalidReplicationFactor.Code, fmt.Errorf("replication factor %d > %d live brokers", rf, live))
				continue
			}
		} else {
			var topic controlplane.Topic
			var err error
			if assignment != nil {
				topic, err = h.store.CreateTopicWithAssignment(ctx, t.Topic, assignment, configs)
			} else {
				topic, err = h.store.CreateTopic(ctx, t.Topic, parts, rf, configs)
			}
			if err != nil {
				fail(adminErrorCode(err), err)
				continue
			}
			rt.TopicID = topic.ID
		}
		rt.NumPartitions, rt.ReplicationFactor = parts, rf
		tc := config.ResolveTopic(configs, h.cfg.TopicDefaults)
		for _, name := range tc.Names() {
			v, src, _ := tc.Get(name)
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			val := v
			c.Name, c.Value, c.Source = name, &val, int8(src)
			rt.Configs = append(rt.Configs, c)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !r.ValidateOnly {
		h.reconcile()
	}
	return kafka.Reply{Response: resp}, nil
}

// manualAssignment returns a CreateTopics entry's replica assignment in
// partition order, nil when it has none; on error, Kafka's code for it.
func manualAssignment(t kmsg.CreateTopicsRequestTopic) ([][]int32, int16, error) {
	if len(t.ReplicaAssignment) == 0 {
		return nil, 0, nil
	}
	if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
		return nil, kerr.InvalidRequest.Code, errors.New("both numPartitions or replicationFactor and replicasAssignments were set; both cannot be used at the same time")
	}
	out := make([][]int32, len(t.ReplicaAssignment))
	for _, a := range t.ReplicaAssignment {
		if a.Partition < 0 || int(a.Partition) >= len(out) || out[a.Partition] != nil {
			return nil, kerr.InvalidReplicaAssignment.Code, errors.New("partitions should be consecutive and start from 0")
		}
		out[a.Partition] = a.Replicas
		if out[a.Partition] == nil {
			out[a.Partition] = []int32{}
		}
	}
	return out, 0, nil
}
