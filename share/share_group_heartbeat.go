package share

// ShareGroupHeartbeat (key 76), version 1 (Kafka 4.1+; v0 was the early
// access version and is not served): KIP-932 share group membership.
//
//   - The member names itself (a UUID, at most 36 characters); an empty
//     member id is INVALID_REQUEST.
//   - Epoch 0 joins (or rejoins in place), -1 leaves; any other epoch
//     must be the member's current or previous one (FENCED_MEMBER_EPOCH),
//     and a member the coordinator does not know is UNKNOWN_MEMBER_ID (it
//     rejoins with epoch 0).
//   - The assignment is sent when it changed: every partition of every
//     subscribed topic (groups.go). A null subscription keeps the last
//     one; a joining member must send one (INVALID_REQUEST).
//   - A member the group does not have, in a group of
//     group.share.max.size members, is GROUP_MAX_SIZE_REACHED ("The share
//     group has reached its maximum capacity of N members."), whatever
//     its epoch, as Kafka's throwIfShareGroupIsFull.
//   - GROUP_ID_NOT_FOUND ("Group g is not a share group.") for a classic
//     or consumer group's id, as Kafka's (no conversion between types).
//   - NOT_COORDINATOR unless this node leads the group's
//     __consumer_offsets partition, COORDINATOR_LOAD_IN_PROGRESS while it
//     loads it.
//   - A change of the group's epoch, members or assignments is written to
//     __consumer_offsets (SetMembershipLog) and committed before it is
//     answered; a heartbeat that changes none writes nothing.
//
// With an authorizer it needs Read on the group (GROUP_AUTHORIZATION_FAILED)
// and Describe on each subscribed topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleShareGroupHeartbeat(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ShareGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *kerr.Error, msg string) (kafka.Reply, error) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return kafka.Reply{Response: resp}, nil
	}
	if !c.cfg.Authorizer.Authorize(req, acl.OpRead, acl.Group(r.GroupID)) {
		return fail(kerr.GroupAuthorizationFailed, "")
	}
	for _, t := range r.SubscribedTopicNames {
		if !c.cfg.Authorizer.Authorize(req, acl.OpDescribe, acl.Topic(t)) {
			return fail(kerr.TopicAuthorizationFailed, "Not authorized to describe a subscribed topic.")
		}
	}
	switch {
	case r.GroupID == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case r.MemberID == "" || len(r.MemberID) > 36:
		return fail(kerr.InvalidRequest, "MemberId must be a non-empty id of at most 36 characters.")
	case r.MemberEpoch == 0 && r.SubscribedTopicNames == nil:
		return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	case r.MemberEpoch < -1:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	if code := c.ready(r.GroupID); code != 0 {
		resp.ErrorCode = code
		return kafka.Reply{Response: resp}, nil
	}
	host := ""
	if req.Conn != nil && req.Conn.Remote != nil {
		host = req.Conn.Remote.String()
	}
	now := time.Now().UnixMilli()
	resp.MemberID = kmsg.StringPtr(r.MemberID)
	resp.HeartbeatIntervalMillis = c.cfg.group(r.GroupID).heartbeatIntervalMs

	var code int16
	var left bool
	var send map[[16]byte]int32 // the assignment to send, with sendAssignment
	sendAssignment := false
	err := c.update(ctx, r.GroupID, func(g *shareGroup) (*shareGroup, error) {
		code, left, send, sendAssignment = 0, false, nil, false
		if g == nil {
			if r.MemberEpoch != 0 {
				code = kerr.UnknownMemberID.Code
				return nil, nil
			}
			g = &shareGroup{id: r.GroupID, members: map[string]*member{}, topics: map[string]TopicMeta{}}
		}
		m := g.members[r.MemberID]
		if m == nil && len(g.members) >= c.cfg.MaxSize {
			code = kerr.GroupMaxSizeReached.Code
			return g, nil
		}
		if r.MemberEpoch == -1 {
			if m != nil {
				delete(g.members, r.MemberID)
				g.epoch++
			}
			left = true
			return g, nil
		}
		joined := false
		switch {
		case m == nil && r.MemberEpoch != 0:
			code = kerr.UnknownMemberID.Code
			return g, nil
		case m == nil:
			m = &member{id: r.MemberID}
			g.members[r.MemberID] = m
			joined = true
		case r.MemberEpoch == 0:
			joined = true // a rejoin in place: the assignment is sent again
		case r.MemberEpoch != m.epoch && r.MemberEpoch != m.prevEpoch:
			code = kerr.FencedMemberEpoch.Code
			return g, nil
		}
		m.clientID, m.host, m.lastSeenMs = req.ClientID, host, now
		if r.RackID != nil {
			m.rack = kmsg.StringPtr(*r.RackID)
		}
		if r.SubscribedTopicNames != nil {
			m.topics = slices.Compact(slices.Sorted(slices.Values(r.SubscribedTopicNames)))
		}
		changed := g.assign(m, c.cluster.Topic)
		if joined && m.epoch == 0 {
			// Nothing assignable yet (no subscribed topic exists): the
			// member still takes an epoch, so that its next heartbeat is
			// not a join.
			g.epoch++
			m.prevEpoch, m.epoch = 0, g.epoch
		}
		resp.MemberEpoch = m.epoch
		if changed || joined || r.MemberEpoch != m.epoch {
			send, sendAssignment = m.assigned, true
		}
		return g, nil
	})
	if err != nil {
		if errors.Is(err, ErrNotShareGroup) {
			return fail(kerr.GroupIDNotFound, "Group "+r.GroupID+" is not a share group.")
		}
		resp.ErrorCode = logErrCode(err)
		return kafka.Reply{Response: resp}, nil
	}
	if code == kerr.GroupMaxSizeReached.Code {
		return fail(kerr.GroupMaxSizeReached, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", c.cfg.MaxSize))
	}
	if code != 0 {
		return fail(kerr.ErrorForCode(code).(*kerr.Error), "")
	}
	if left {
		if c.parts != nil {
			c.parts.ReleaseMember(r.GroupID, r.MemberID)
		}
		resp.MemberEpoch = -1
		return kafka.Reply{Response: resp}, nil
	}
	if sendAssignment {
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{}
		for _, tid := range sortedIDs(send) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = tid, partitionRange(send[tid])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = a
	}
	return kafka.Reply{Response: resp}, nil
}
