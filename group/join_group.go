package group

// JoinGroup (key 11), versions 0-9.
//
//   - v1: RebalanceTimeoutMillis (v0 uses the session timeout for both).
//   - v4: a first join without a member id gets MEMBER_ID_REQUIRED with
//     the generated id (KIP-394); the member joins again with it.
//   - v5: GroupInstanceID, static membership (KIP-345): a rejoin with a
//     known instance id replaces the old member id, without a rebalance
//     when the group is Stable and the protocols are unchanged.
//   - v6: flexible versions.  v7: ProtocolType and ProtocolName in the
//     response.  v8: Reason.  v9: SkipAssignment for a static leader that
//     rejoins without a rebalance (KIP-814).
//
// The join is held in the group's state machine until the rebalance
// completes; the handler returns at once and the answer is written in
// Reply.Wait, so the connection keeps serving other requests.
//
// With an authorizer it needs Read on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleJoinGroup(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.JoinGroupRequest)
	if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	clientID, host := req.ClientID, ""
	if req.Conn != nil && req.Conn.Remote != nil {
		host = req.Conn.Remote.String()
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		fail := func(code int16) (kmsg.Response, error) {
			resp.ErrorCode = code
			return resp, nil
		}
		if r.Group == "" {
			return fail(kerr.InvalidGroupID.Code)
		}
		rn, err := c.lookup(r.Group, r.MemberID == "")
		if err != nil {
			return fail(errorCode(err))
		}
		if rn == nil {
			return fail(kerr.UnknownMemberID.Code)
		}
		// Copy what the group keeps: the request may alias the connection's buffer.
		ps := make([]protocol, len(r.Protocols))
		for i, p := range r.Protocols {
			ps[i] = protocol{name: p.Name, metadata: append([]byte(nil), p.Metadata...)}
		}
		j := joinRequest{
			version: req.Version, memberID: r.MemberID, instanceID: r.InstanceID,
			clientID: clientID, clientHost: host, protocolType: r.ProtocolType, protocols: ps,
			sessionTimeout:   time.Duration(r.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond,
		}
		if req.Version == 0 {
			j.rebalanceTimeout = j.sessionTimeout
		}
		j.topics = c.topicView() // for a classic member of a consumer group
		return c.call(ctx, rn, func(g *group, send replyFn) { g.join(j, &waiter{resp: resp, send: send}) },
			func() kmsg.Response { resp.ErrorCode = kerr.NotCoordinator.Code; return resp })
	}}, nil
}

// joinRequest is a JoinGroup's fields, owned by the group.
type joinRequest struct {
	version          int16
	memberID         string
	instanceID       *string
	clientID         string
	clientHost       string
	protocolType     string
	protocols        []protocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	topics           *topicView // the cluster's topics, for a consumer group
}

func (j *joinRequest) newMember(id string) *member {
	return &member{
		id: id, instanceID: j.instanceID, clientID: j.clientID, clientHost: j.clientHost,
		sessionTimeout: j.sessionTimeout, rebalanceTimeout: j.rebalanceTimeout, protocols: j.protocols,
	}
}

// join applies a JoinGroup; w is answered now or when the rebalance ends.
func (g *group) join(j joinRequest, w *waiter) {
	resp := w.resp.(*kmsg.JoinGroupResponse)
	fail := func(code int16) {
		resp.ErrorCode = code
		w.send(resp, -1)
	}
	if j.sessionTimeout < g.limits.MinSessionTimeout || j.sessionTimeout > g.limits.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout.Code)
		return
	}
	if g.state == StateDead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if g.isShare() {
		fail(kerr.InconsistentGroupProtocol.Code) // a share group, as Kafka answers
		return
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// A consumer group with members serves a classic member
			// through the consumer group (consumer_classic.go).
			g.classicJoinConsumer(j, w)
			return
		}
		// An empty consumer group becomes a classic one, as in Kafka.
		if _, err := g.persist(g.consumer.tombstones(g.id)); err != nil {
			fail(errorCode(err))
			return
		}
		g.consumer = nil
	}
	if !g.protocolsMatch(j.protocolType, j.protocols) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if j.memberID == "" {
		if j.instanceID != nil {
			if old, ok := g.static[*j.instanceID]; ok && g.members[old] != nil {
				g.replaceStatic(g.members[old], j, w)
				return
			}
		}
		prefix := j.clientID
		if j.instanceID != nil {
			prefix = *j.instanceID
		}
		id := newMemberID(prefix)
		if j.version >= 4 && j.instanceID == nil {
			g.pending[id] = g.now.Add(j.sessionTimeout)
			resp.MemberID = id
			fail(kerr.MemberIDRequired.Code)
			return
		}
		g.addMember(j.newMember(id), j.protocolType, w)
		return
	}
	if code := g.validateInstance(j.instanceID, j.memberID); code != 0 {
		fail(code)
		return
	}
	if _, ok := g.pending[j.memberID]; ok {
		g.addMember(j.newMember(j.memberID), j.protocolType, w)
		return
	}
	m, ok := g.members[j.memberID]
	if !ok {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	switch g.state {
	case StatePreparingRebalance:
		g.updateMember(m, j.protocols, j.rebalanceTimeout, j.sessionTimeout, w)
	case StateCompletingRebalance, StateStable:
		if m.sameProtocols(j.protocols) && (g.state == StateCompletingRebalance || m.id != g.leader) {
			// Nothing changed: the member missed its answer; give it again.
			g.touch(m)
			g.fillJoin(m, resp)
			w.send(resp, -1)
			return
		}
		g.updateMember(m, j.protocols, j.rebalanceTimeout, j.sessionTimeout, w)
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

// replaceStatic gives a static member that rejoins without its member id a
// new id, fencing the old one (KIP-345). As in Kafka, a Stable group whose
// selected protocol stays the same with the new member's protocols does not
// rebalance: the member keeps its assignment, the answer names the leader
// as it was (the old id when this member led) and tells a leader to skip
// the assignment (KIP-814).
func (g *group) replaceStatic(old *member, j joinRequest, w *waiter) {
	resp := w.resp.(*kmsg.JoinGroupResponse)
	for _, held := range []*waiter{old.join, old.sync} {
		if held != nil {
			held.fail(kerr.FencedInstanceID.Code)
		}
	}
	old.join, old.sync = nil, nil
	prevLeader := g.leader
	m := j.newMember(newMemberID(*j.instanceID))
	m.assignment, m.synced = old.assignment, old.synced
	delete(g.members, old.id)
	g.members[m.id] = m
	g.static[*j.instanceID] = m.id
	if g.leader == old.id {
		g.leader = m.id
	}
	g.touch(m)
	if g.state == StateStable && g.selectProtocol() == g.protocol {
		g.fillJoin(m, resp)
		resp.LeaderID = prevLeader
		resp.SkipAssignment = m.id == g.leader
		hw, err := g.persistMetadata()
		if err != nil {
			hw = -1 // the replacement stands in memory; the next rebalance persists again
		}
		w.send(resp, hw)
		return
	}
	m.join = w
	g.rebalance()
}
