package group

// DescribeGroups (key 15), versions 0-6.
//
//   - v3: AuthorizedOperations (KIP-430), when asked: the operations the
//     principal may do on the group.
//   - v4: GroupInstanceID per member.  v5: flexible versions.
//   - v6 (KIP-1043): an unknown group is GROUP_ID_NOT_FOUND ("Group g not
//     found."), still in state Dead, and every error carries an
//     ErrorMessage.
//
// Before v6 an unknown group is described as Dead with no error, as Kafka
// does. A
// KIP-848 consumer group is described as Kafka 4 describes one to a
// classic client: protocol type "consumer", its assignor as the protocol,
// its state, and per member a consumer protocol subscription (its topics,
// owned partitions, member epoch, rack) and assignment (v3 encodings).
// Members carry their metadata for the chosen protocol and their
// assignment once a protocol is chosen.
//
// With an authorizer each group needs Describe, else it is
// GROUP_AUTHORIZATION_FAILED with nothing described.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleDescribeGroups(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeGroupsRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		var view *topicView // read once, for the consumer groups
		for _, id := range r.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.State, dg.AuthorizedOperations = id, StateDead.String(), -2147483648
			if !c.allowed(req, acl.OpDescribe, acl.Group(id)) {
				dg.ErrorCode, dg.State = kerr.GroupAuthorizationFailed.Code, ""
				resp.Groups = append(resp.Groups, describedError(r.Version, dg))
				continue
			}
			if r.IncludeAuthorizedOperations {
				dg.AuthorizedOperations = c.cfg.Authorizer.AuthorizedOperations(req, acl.Group(id))
			}
			rn, err := c.lookup(id, false)
			if err != nil {
				dg.ErrorCode = errorCode(err)
			} else if rn != nil {
				if view == nil {
					view = c.topicView()
				}
				_, err := c.call(ctx, rn, func(g *group, send replyFn) {
					g.describe(&dg, view)
					send(nil, -1)
				}, func() kmsg.Response { dg.State = StateDead.String(); return nil })
				if err != nil {
					return nil, err
				}
			}
			resp.Groups = append(resp.Groups, describedError(r.Version, dg))
		}
		return resp, nil
	}}, nil
}

// describedError completes dg for a v6 answer (KIP-1043): a Dead group
// without an error is GROUP_ID_NOT_FOUND, and an error carries a message.
// Older versions get dg unchanged.
func describedError(version int16, dg kmsg.DescribeGroupsResponseGroup) kmsg.DescribeGroupsResponseGroup {
	if version < 6 {
		return dg
	}
	if dg.ErrorCode == 0 && dg.State == StateDead.String() {
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := fmt.Sprintf("Group %s not found.", dg.Group)
		dg.ErrorMessage = &msg
		return dg
	}
	if err := kerr.ErrorForCode(dg.ErrorCode); err != nil && dg.ErrorMessage == nil {
		msg := err.(*kerr.Error).Description
		dg.ErrorMessage = &msg
	}
	return dg
}

func (g *group) describe(dg *kmsg.DescribeGroupsResponseGroup, view *topicView) {
	if g.isShare() {
		return // Dead: not a classic group (ShareGroupDescribe describes it)
	}
	if g.consumer != nil {
		g.consumer.describeClassic(dg, view)
		return
	}
	dg.State, dg.ProtocolType, dg.Protocol = g.state.String(), g.protocolType, g.protocol
	for _, id := range g.memberIDs() {
		m := g.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if g.protocol != "" && g.state != StatePreparingRebalance {
			md, _ := m.metadataFor(g.protocol)
			dm.ProtocolMetadata = md
			dm.MemberAssignment = m.assignment
		}
		dg.Members = append(dg.Members, dm)
	}
}
