package group

// LeaveGroup (key 13), versions 0-5.
//
//   - v3: a batch of members, each by member id or group instance id
//     (KIP-345), with an error per member.
//   - v4: flexible versions.  v5: Reason per member.
//
// Each member that leaves triggers a rebalance of the rest.
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

// leaving is one member of a LeaveGroup.
type leaving struct {
	memberID   string
	instanceID *string
}

// member is the id of the member l names, given the group's static
// members (instance id -> member id, KIP-345): l's member id, or the one
// its instance id holds. code is UNKNOWN_MEMBER_ID for an instance id the
// group does not know and FENCED_INSTANCE_ID for one that holds another
// member id than l's; 0 otherwise.
func (l leaving) member(static map[string]string) (id string, code int16) {
	if l.instanceID == nil {
		return l.memberID, 0
	}
	known, ok := static[*l.instanceID]
	switch {
	case !ok:
		return "", kerr.UnknownMemberID.Code
	case l.memberID != "" && l.memberID != known:
		return "", kerr.FencedInstanceID.Code
	}
	return known, 0
}

func (c *Coordinator) handleLeaveGroup(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.LeaveGroupRequest)
	if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		var ls []leaving
		if req.Version < 3 {
			ls = []leaving{{memberID: r.MemberID}}
		} else {
			for _, m := range r.Members {
				ls = append(ls, leaving{memberID: m.MemberID, instanceID: m.InstanceID})
			}
		}
		rn, err := c.lookup(r.Group, false)
		switch {
		case r.Group == "":
			resp.ErrorCode = kerr.InvalidGroupID.Code
		case err != nil:
			resp.ErrorCode = errorCode(err)
		case rn == nil && req.Version < 3:
			resp.ErrorCode = kerr.UnknownMemberID.Code
		case rn == nil:
			for _, l := range ls {
				resp.Members = append(resp.Members, leaveResult(l, kerr.UnknownMemberID.Code))
			}
		}
		if resp.ErrorCode != 0 || rn == nil {
			return resp, nil
		}
		return c.call(ctx, rn, func(g *group, send replyFn) {
			codes, hw := g.leave(ls)
			if req.Version < 3 {
				resp.ErrorCode = codes[0]
			} else {
				for i, l := range ls {
					resp.Members = append(resp.Members, leaveResult(l, codes[i]))
				}
			}
			send(resp, hw)
		}, func() kmsg.Response { resp.ErrorCode = kerr.NotCoordinator.Code; return resp })
	}}, nil
}

func leaveResult(l leaving, code int16) kmsg.LeaveGroupResponseMember {
	m := kmsg.NewLeaveGroupResponseMember()
	m.MemberID, m.InstanceID, m.ErrorCode = l.memberID, l.instanceID, code
	return m
}

// leave removes the members and rebalances; it returns a code per member
// and the offset to wait for (-1: none). Classic members of a consumer
// group leave it (consumer_classic.go).
func (g *group) leave(ls []leaving) ([]int16, int64) {
	if g.consumer != nil {
		codes, recs := g.classicLeaveConsumer(ls)
		if len(recs) == 0 {
			return codes, -1
		}
		hw, err := g.persist(recs)
		if err != nil {
			for i, c := range codes {
				if c == 0 {
					codes[i] = errorCode(err)
				}
			}
			return codes, -1
		}
		return codes, hw
	}
	codes := make([]int16, len(ls))
	left := false
	for i, l := range ls {
		id, code := l.member(g.static)
		if code != 0 {
			codes[i] = code
			continue
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			continue
		}
		m, ok := g.members[id]
		if !ok {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		g.removeMember(m)
		left = true
	}
	if left && g.state != StateEmpty && g.state != StateDead {
		g.rebalance()
	} else if g.state == StatePreparingRebalance && g.allJoined() {
		g.completeJoin()
	}
	return codes, -1
}
