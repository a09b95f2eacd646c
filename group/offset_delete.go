package group

// OffsetDelete (key 47), version 0 (KIP-496).
//
// Deletes committed offsets of a group by writing tombstones. An unknown
// group is GROUP_ID_NOT_FOUND. In a "consumer" group with members, the
// partitions of topics a member subscribes to get GROUP_SUBSCRIBED_TO_TOPIC
// and are kept; a non-empty group of another protocol type is
// NON_EMPTY_GROUP.
//
// With an authorizer it needs Delete on the group
// (GROUP_AUTHORIZATION_FAILED) and Read on each topic (its partitions
// TOPIC_AUTHORIZATION_FAILED, their offsets kept).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleOffsetDelete(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.OffsetDeleteRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		var tps []topicPartition
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, topicPartition{t.Topic, p.Partition})
			}
		}
		if !c.allowed(req, acl.OpDelete, acl.Group(r.Group)) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		denied := c.deniedTopics(req, acl.OpRead, func(yield func(string) bool) {
			for _, t := range r.Topics {
				if !yield(t.Topic) {
					return
				}
			}
		})
		if denied != nil {
			kept := tps[:0]
			for _, tp := range tps {
				if !denied[tp.topic] {
					kept = append(kept, tp)
				}
			}
			tps = kept
		}
		rn, err := c.lookup(r.Group, false)
		switch {
		case r.Group == "":
			resp.ErrorCode = kerr.InvalidGroupID.Code
		case err != nil:
			resp.ErrorCode = errorCode(err)
		case rn == nil:
			resp.ErrorCode = kerr.GroupIDNotFound.Code
		}
		if resp.ErrorCode != 0 {
			return resp, nil
		}
		return c.call(ctx, rn, func(g *group, send replyFn) {
			code, codes, hw := g.deleteOffsets(tps)
			resp.ErrorCode = code
			if code == 0 {
				i := 0
				for _, t := range r.Topics {
					rt := kmsg.NewOffsetDeleteResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetDeleteResponseTopicPartition()
						if denied[t.Topic] {
							rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
							rt.Partitions = append(rt.Partitions, rp)
							continue
						}
						rp.Partition, rp.ErrorCode = p.Partition, codes[i]
						rt.Partitions = append(rt.Partitions, rp)
						i++
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
			send(resp, hw)
		}, func() kmsg.Response { resp.ErrorCode = kerr.NotCoordinator.Code; return resp })
	}}, nil
}

// subscribedTopics is the union of the members' subscribed topics in a
// "consumer" group, and false when a subscription does not decode.
func (g *group) subscribedTopics() (map[string]bool, bool) {
	topics := map[string]bool{}
	for _, m := range g.members {
		md, _ := m.metadataFor(g.protocol)
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(md); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// deleteOffsets applies an OffsetDelete: a group error code, or a code per
// partition, and the offset to wait for.
func (g *group) deleteOffsets(tps []topicPartition) (int16, []int16, int64) {
	if g.state == StateDead || g.isShare() {
		// A share group has no committed offsets to delete (Kafka's
		// ShareGroup.validateOffsetDelete).
		return kerr.GroupIDNotFound.Code, nil, -1
	}
	subscribed := map[string]bool{}
	if g.consumer != nil {
		// A consumer group refuses only the topics its members subscribe
		// to, as Kafka's: none once the last member has left (the
		// group's subscription metadata is recomputed only at a member's
		// heartbeat, and an empty group has none to send).
		if len(g.consumer.members) > 0 {
			for _, t := range g.consumer.subscription {
				subscribed[t.name] = true
			}
		}
		for _, m := range g.consumer.members {
			for _, t := range m.subscribedTopics {
				subscribed[t] = true
			}
		}
	} else if len(g.members) > 0 {
		var ok bool
		if g.protocolType != "consumer" || g.protocol == "" {
			return kerr.NonEmptyGroup.Code, nil, -1
		}
		if subscribed, ok = g.subscribedTopics(); !ok {
			return kerr.NonEmptyGroup.Code, nil, -1
		}
	}
	codes := make([]int16, len(tps))
	var recs []record
	var gone []topicPartition
	for i, tp := range tps {
		if subscribed[tp.topic] {
			codes[i] = kerr.GroupSubscribedToTopic.Code
			continue
		}
		_, applied := g.offsets[tp]
		if _, pending := g.unreplicated[tp]; applied || pending {
			recs = append(recs, record{key: offsetKey(g.id, tp)})
			gone = append(gone, tp)
		}
	}
	if len(recs) == 0 {
		return 0, codes, -1
	}
	hw, err := g.persist(recs)
	if err != nil {
		return errorCode(err), nil, -1
	}
	for _, tp := range gone {
		g.forgetOffset(tp, hw)
	}
	return 0, codes, hw
}
