package admin

// CreatePartitions (key 37), versions 0-3.
//
//   - v1: no change here.  v2: flexible versions.  v3: no change here.
//
// The count only grows (INVALID_PARTITIONS otherwise). A manual assignment
// names the replicas of each new partition: as many lists as new
// partitions, each of the topic's replication factor in distinct registered
// brokers (fenced ones included), at least one of them live
// (INVALID_REPLICA_ASSIGNMENT otherwise).
//
// __consumer_offsets and __transaction_state are POLICY_VIOLATION: their
// partition count is their coordinator's setting, which maps keys to
// partitions (internal_topics.go; Kafka accepts it).
//
// With an authorizer, each topic needs Alter (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleCreatePartitions(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var assignment [][]int32
		for _, a := range t.Assignment {
			assignment = append(assignment, a.Replicas)
		}
		switch {
		case !h.authz.Authorize(req, acl.OpAlter, acl.Topic(t.Topic)):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case internalTopic(t.Topic):
			rt.ErrorCode = kerr.PolicyViolation.Code
			rt.ErrorMessage = errMessage(fmt.Errorf("%w: the partition count of %s is %s's; its keys never map to more",
				errPolicyViolation, t.Topic, internalTopicOwner(t.Topic)))
		case r.ValidateOnly:
			topic, ok := h.store.Topic(t.Topic)
			if !ok {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if t.Count <= topic.Partitions {
				rt.ErrorCode = kerr.InvalidPartitions.Code
				rt.ErrorMessage = errMessage(fmt.Errorf("topic has %d partitions, asked for %d", topic.Partitions, t.Count))
			} else if assignment != nil {
				err := controlplane.ValidateAssignment(assignment, int(topic.ReplicationFactor), h.store.Registered, h.liveBrokers())
				if err == nil && int32(len(assignment)) != t.Count-topic.Partitions {
					err = fmt.Errorf("%w: %d new partitions, %d assignments", controlplane.ErrInvalidReplicaAssignment, t.Count-topic.Partitions, len(assignment))
				}
				rt.ErrorCode, rt.ErrorMessage = adminErrorCode(err), errMessage(err)
			}
		case assignment != nil:
			if err := h.store.CreatePartitionsWithAssignment(ctx, t.Topic, t.Count, assignment); err != nil {
				rt.ErrorCode, rt.ErrorMessage = adminErrorCode(err), errMessage(err)
			}
		default:
			if err := h.store.CreatePartitions(ctx, t.Topic, t.Count); err != nil {
				rt.ErrorCode, rt.ErrorMessage = adminErrorCode(err), errMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !r.ValidateOnly {
		h.reconcile()
	}
	return kafka.Reply{Response: resp}, nil
}
