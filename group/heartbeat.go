package group

// Heartbeat (key 12), versions 0-4.
//
//   - v3: GroupInstanceID (KIP-345).  v4: flexible versions.
//
// A heartbeat restarts the member's session timer. During
// PreparingRebalance it answers REBALANCE_IN_PROGRESS, which tells the
// member to join again.
//
// With an authorizer it needs Read on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleHeartbeat(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.HeartbeatRequest)
	if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		rn, code := c.memberGroup(r.Group)
		if code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
		memberID, instanceID, generation := r.MemberID, r.InstanceID, r.Generation
		return c.call(ctx, rn, func(g *group, send replyFn) {
			resp.ErrorCode = g.heartbeat(memberID, instanceID, generation)
			send(resp, -1)
		}, func() kmsg.Response { resp.ErrorCode = kerr.NotCoordinator.Code; return resp })
	}}, nil
}

// heartbeat applies a Heartbeat and returns its error code.
func (g *group) heartbeat(memberID string, instanceID *string, generation int32) int16 {
	if g.consumer != nil {
		return g.classicHeartbeatConsumer(memberID, instanceID, generation)
	}
	if code := g.validateInstance(instanceID, memberID); code != 0 {
		return code
	}
	m, ok := g.members[memberID]
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	switch g.state {
	case StatePreparingRebalance:
		g.touch(m)
		return kerr.RebalanceInProgress.Code
	case StateCompletingRebalance, StateStable:
		g.touch(m)
		return 0
	}
	return kerr.UnknownMemberID.Code
}
