package group

// SyncGroup (key 14), versions 0-5.
//
//   - v3: GroupInstanceID (KIP-345).  v4: flexible versions.
//   - v5: ProtocolType and ProtocolName in request and response; a
//     mismatch is INCONSISTENT_GROUP_PROTOCOL.
//
// Followers' syncs are held until the leader's arrives; the leader's
// assignment is written to __consumer_offsets (group metadata) and every
// held sync is answered once it is appended; the leader's own answer waits
// for the high watermark too.
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

// syncRequest is a SyncGroup's fields, owned by the group.
type syncRequest struct {
	memberID     string
	instanceID   *string
	generation   int32
	protocolType *string
	protocol     *string
	assignments  map[string][]byte // leader only
	topics       *topicView        // the cluster's topics, for a consumer group
}

func (c *Coordinator) handleSyncGroup(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.SyncGroupRequest)
	if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		rn, code := c.memberGroup(r.Group)
		if code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
		s := syncRequest{memberID: r.MemberID, instanceID: r.InstanceID, generation: r.Generation,
			protocolType: r.ProtocolType, protocol: r.Protocol, topics: c.topicView()}
		if len(r.GroupAssignment) > 0 {
			s.assignments = make(map[string][]byte, len(r.GroupAssignment))
			for _, a := range r.GroupAssignment {
				s.assignments[a.MemberID] = append([]byte(nil), a.MemberAssignment...)
			}
		}
		return c.call(ctx, rn, func(g *group, send replyFn) { g.sync(s, &waiter{resp: resp, send: send}) },
			func() kmsg.Response { resp.ErrorCode = kerr.NotCoordinator.Code; return resp })
	}}, nil
}

// emptyConsumerAssignment is a ConsumerMemberAssignment v0 with no topics,
// for members of a "consumer" group the leader assigned nothing: clients
// decode whatever they get.
var emptyConsumerAssignment = func() []byte {
	a := kmsg.NewConsumerMemberAssignment()
	return a.AppendTo(nil)
}()

func (g *group) sync(s syncRequest, w *waiter) {
	resp := w.resp.(*kmsg.SyncGroupResponse)
	fail := func(code int16) {
		resp.ErrorCode = code
		w.send(resp, -1)
	}
	if g.consumer != nil {
		g.classicSyncConsumer(s, w)
		return
	}
	if code := g.validateInstance(s.instanceID, s.memberID); code != 0 {
		fail(code)
		return
	}
	m, ok := g.members[s.memberID]
	switch {
	case !ok:
		fail(kerr.UnknownMemberID.Code)
		return
	case s.generation != g.generation:
		fail(kerr.IllegalGeneration.Code)
		return
	case s.protocolType != nil && *s.protocolType != g.protocolType,
		s.protocol != nil && *s.protocol != g.protocol:
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	g.touch(m)
	switch g.state {
	case StatePreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case StateStable:
		g.fillSync(m, resp)
		w.send(resp, -1)
	case StateCompletingRebalance:
		if m.sync != nil {
			m.sync.fail(kerr.RebalanceInProgress.Code) // a retried sync replaces the old one
		}
		m.sync, m.synced = w, true
		if m.id == g.leader {
			g.completeSync(s.assignments)
		}
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

func (g *group) fillSync(m *member, resp *kmsg.SyncGroupResponse) {
	resp.ErrorCode = 0
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
}

// completeSync takes the leader's assignments, persists the group and
// makes it Stable, answering every held sync. If the append fails, the
// held syncs get the error and the group rebalances.
func (g *group) completeSync(assignments map[string][]byte) {
	for _, m := range g.members {
		m.assignment = assignments[m.id]
		if len(m.assignment) == 0 && g.protocolType == "consumer" {
			m.assignment = emptyConsumerAssignment
		}
	}
	hw, err := g.persistMetadata()
	if err != nil {
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync.fail(errorCode(err))
				m.sync = nil
			}
		}
		g.rebalance()
		return
	}
	g.setState(StateStable)
	g.counters.classicRebalanced()
	g.syncDeadline = time.Time{}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		if m.sync == nil {
			continue
		}
		resp := m.sync.resp.(*kmsg.SyncGroupResponse)
		g.fillSync(m, resp)
		send := m.sync.send
		m.sync = nil
		g.touch(m)
		send(resp, hw)
	}
}
