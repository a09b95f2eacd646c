package share

// ShareGroupDescribe (key 77), version 1: the share groups this node
// coordinates, with members, epochs and assignments. A group this node
// does not coordinate is NOT_COORDINATOR, an unknown one GROUP_ID_NOT_FOUND.
// The assignor is "simple" (Kafka's name; groups.go says what it does).
// With an authorizer a group needs Describe (GROUP_AUTHORIZATION_FAILED).

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleShareGroupDescribe(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ShareGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range r.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.AuthorizedOperations = id, -2147483648
		switch {
		case !c.cfg.Authorizer.Authorize(req, acl.OpDescribe, acl.Group(id)):
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			if rg.ErrorCode = c.ready(id); rg.ErrorCode != 0 {
				break
			}
			gi, ok := c.Group(id)
			if !ok {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				rg.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
				break
			}
			rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = gi.State, gi.Epoch, gi.Epoch, "simple"
			for _, mi := range gi.Members {
				rm := kmsg.NewShareGroupDescribeResponseGroupMember()
				rm.MemberID, rm.RackID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = mi.ID, mi.Rack, mi.Epoch, mi.ClientID, mi.Host
				rm.SubscribedTopicNames = mi.Topics
				for _, t := range slices.Sorted(maps.Keys(mi.Assignment)) {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.Topic, tp.Partitions = t, mi.Assignment[t]
					if meta, ok := c.cluster.Topic(t); ok {
						tp.TopicID = meta.ID
					}
					rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
				}
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return kafka.Reply{Response: resp}, nil
}
