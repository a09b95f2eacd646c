package group

// ConsumerGroupDescribe (key 69), versions 0-1.
//
//   - v1: MemberType per member (1: the consumer protocol, 0: a classic
//     member of the consumer group, consumer_classic.go).
//
// Per group: its state (Empty, Assigning, Reconciling, Stable), group
// epoch, assignment epoch, assignor, and per member its epoch, client,
// rack, subscription, current and target assignments (topic ids and
// names). A classic group, or none, is GROUP_ID_NOT_FOUND.
//
// With an authorizer it needs Describe on each group
// (GROUP_AUTHORIZATION_FAILED); IncludeAuthorizedOperations is answered
// with the operations the principal may do on the group.

import (
	"context"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleConsumerGroupDescribe(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ConsumerGroupDescribeRequest)
	allowed := make([]bool, len(r.Groups))
	for i, id := range r.Groups {
		allowed[i] = c.allowed(req, acl.OpDescribe, acl.Group(id))
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		view := c.topicView()
		for i, id := range r.Groups {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group = id
			dg.AuthorizedOperations = math.MinInt32
			if r.IncludeAuthorizedOperations && allowed[i] {
				dg.AuthorizedOperations = c.cfg.Authorizer.AuthorizedOperations(req, acl.Group(id))
			}
			switch {
			case !allowed[i]:
				dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case id == "":
				dg.ErrorCode = kerr.InvalidGroupID.Code
			default:
				c.describeConsumerGroup(ctx, id, view, req.Version, &dg)
			}
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}}, nil
}

func (c *Coordinator) describeConsumerGroup(ctx context.Context, id string, view *topicView, version int16, dg *kmsg.ConsumerGroupDescribeResponseGroup) {
	notFound := func() {
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		dg.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a consumer group.")
	}
	rn, err := c.lookup(id, false)
	switch {
	case err != nil:
		dg.ErrorCode = errorCode(err)
		return
	case rn == nil:
		notFound()
		return
	}
	_, err = c.call(ctx, rn, func(g *group, send replyFn) {
		cg := g.consumer
		if cg == nil {
			notFound()
			send(nil, -1)
			return
		}
		dg.State, dg.Epoch, dg.AssignmentEpoch, dg.AssignorName = cg.state(), cg.epoch, cg.assignmentEpoch, cg.assignorName()
		for _, mid := range cg.memberIDs() {
			m := cg.members[mid]
			dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, clonePtr(m.instanceID), clonePtr(m.rackID), m.epoch
			dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
			dm.SubscribedTopics, dm.SubscribedTopicRegex = slices.Clone(m.subscribedTopics), clonePtr(m.regex)
			dm.Assignment, dm.TargetAssignment = describeAssignment(m.assigned, view), describeAssignment(m.target, view)
			if version >= 1 {
				dm.MemberType = 1
				if m.classic != nil {
					dm.MemberType = 0
				}
			}
			dg.Members = append(dg.Members, dm)
		}
		send(nil, -1)
	}, func() kmsg.Response { dg.ErrorCode = kerr.NotCoordinator.Code; return nil })
	if err != nil {
		dg.ErrorCode = kerr.NotCoordinator.Code
	}
}

func describeAssignment(a assignment, view *topicView) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range a.topicIDs() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = id, view.byID[id], slices.Clone(a[id])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

// describeClassic describes the consumer group in DescribeGroups' terms.
func (cg *consumerGroup) describeClassic(dg *kmsg.DescribeGroupsResponseGroup, view *topicView) {
	dg.State, dg.ProtocolType, dg.Protocol = cg.state(), "consumer", cg.assignorName()
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, clonePtr(m.instanceID), m.clientID, m.clientHost
		sub := kmsg.NewConsumerMemberMetadata()
		sub.Version, sub.Topics, sub.Generation, sub.Rack = 3, slices.Clone(m.subscribedTopics), m.epoch, clonePtr(m.rackID)
		asg := kmsg.NewConsumerMemberAssignment()
		asg.Version = 3
		for _, tid := range m.assigned.topicIDs() {
			name := view.byID[tid]
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic, op.Partitions = name, slices.Clone(m.assigned[tid])
			sub.OwnedPartitions = append(sub.OwnedPartitions, op)
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = name, slices.Clone(m.assigned[tid])
			asg.Topics = append(asg.Topics, at)
		}
		dm.ProtocolMetadata, dm.MemberAssignment = sub.AppendTo(nil), asg.AppendTo(nil)
		dg.Members = append(dg.Members, dm)
	}
}
