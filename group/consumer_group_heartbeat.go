package group

// ConsumerGroupHeartbeat (key 68), versions 0-1: the KIP-848 consumer
// group protocol (consumer_group.go).
//
//   - v0: a joining member (epoch 0) may send no member id; the
//     coordinator names it.
//   - v1: SubscribedTopicRegex (RE2, matched against whole topic names);
//     the member names itself, an empty member id is INVALID_REQUEST.
//
// Epoch 0 joins (or rejoins in place), -1 leaves, -2 leaves for now a
// static member (its assignment is kept until its session ends, and the
// same instance id rejoining under a new member id takes it over without
// a new group epoch). Errors are Kafka's: FENCED_MEMBER_EPOCH,
// UNKNOWN_MEMBER_ID, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID,
// UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, INVALID_REQUEST, and
// GROUP_ID_NOT_FOUND for a classic group with members. A member epoch
// above 0 for a group that does not exist is answered UNKNOWN_MEMBER_ID
// (Kafka answers GROUP_ID_NOT_FOUND): the client rejoins either way.
//
// The records a heartbeat writes are appended to __consumer_offsets and
// the answer waits until they are replicated (NOT_COORDINATOR when they
// are not within offsets.commit.timeout.ms). The state machine applies
// them at once: a member that is not answered retries with the same or the
// previous epoch, which the state accepts.
//
// With an authorizer it needs Read on the group (GROUP_AUTHORIZATION_FAILED)
// and Describe on every topic named in the subscription
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleConsumerGroupHeartbeat(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ConsumerGroupHeartbeatRequest)
	fail := func(code int16, msg string) kafka.Reply {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return kafka.Reply{Response: resp}
	}
	if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
		return fail(kerr.GroupAuthorizationFailed.Code, ""), nil
	}
	if denied := c.deniedTopics(req, acl.OpDescribe, slices.Values(r.SubscribedTopicNames)); len(denied) > 0 {
		return fail(kerr.TopicAuthorizationFailed.Code, "Not authorized to describe a subscribed topic."), nil
	}
	host := ""
	if req.Conn != nil && req.Conn.Remote != nil {
		host = req.Conn.Remote.String()
	}
	h := &consumerHeartbeat{
		version: req.Version, memberID: r.MemberID, memberEpoch: r.MemberEpoch,
		instanceID: clonePtr(r.InstanceID), rackID: clonePtr(r.RackID), rebalanceTimeoutMs: r.RebalanceTimeoutMillis,
		regex: clonePtr(r.SubscribedTopicRegex), assignor: clonePtr(r.ServerAssignor),
		owned: fromOwned(r.Topics), clientID: req.ClientID, clientHost: host,
	}
	if r.SubscribedTopicNames != nil {
		h.subscribedTopics = slices.Clone(r.SubscribedTopicNames)
	}
	if req.Version < 1 {
		h.regex = nil
	}
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if r.Group == "" {
			return fail(kerr.InvalidRequest.Code, "GroupId can't be empty.").Response, nil
		}
		rn, err := c.lookup(r.Group, r.MemberEpoch == 0)
		switch {
		case err != nil:
			return fail(errorCode(err), "").Response, nil
		case rn == nil:
			return fail(kerr.UnknownMemberID.Code, "The group does not exist.").Response, nil
		}
		h.topics = c.topicView()
		return c.call(ctx, rn, func(g *group, send replyFn) {
			recs, e := g.consumerHeartbeat(h, resp)
			hw := int64(-1)
			if len(recs) > 0 {
				if hw, err = g.persist(recs); err != nil {
					send(fail(errorCode(err), "").Response, -1)
					return
				}
			}
			if e != nil {
				send(fail(e.code, e.msg).Response, -1)
				return
			}
			send(resp, hw)
		}, func() kmsg.Response { return fail(kerr.NotCoordinator.Code, "").Response })
	}}, nil
}

func clonePtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// topicView is the cluster's topics now (none when the cluster cannot
// list them).
func (c *Coordinator) topicView() *topicView {
	if tl, ok := c.cluster.(TopicLister); ok {
		return newTopicView(tl.TopicsMeta())
	}
	return newTopicView(nil)
}
