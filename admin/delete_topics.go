package admin

// DeleteTopics (key 20), versions 0-6.
//
//   - v4: flexible versions.  v5: ErrorMessage.
//   - v6: topics may be named by TopicID (KIP-516).
//
// The control plane forgets the topic at once; each node closes and deletes
// its local replicas when it sees the change.
//
// __consumer_offsets and __transaction_state may be deleted, as in Kafka:
// their coordinator makes them again, with its shape, on the next
// FindCoordinator (internal_topics.go).
//
// With an authorizer, each topic needs Delete (TOPIC_AUTHORIZATION_FAILED;
// a topic named by id is answered without its name).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleDeleteTopics(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	for _, name := range r.TopicNames {
		s := name
		targets = append(targets, target{name: &s})
	}
	for _, t := range r.Topics {
		targets = append(targets, target{name: t.Topic, id: t.TopicID})
	}
	for _, t := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		name := ""
		if t.name != nil {
			name = *t.name
		} else if topic, ok := h.store.TopicByID(controlplane.TopicID(t.id)); ok {
			name = topic.Name
			rt.Topic = &topic.Name
		} else {
			rt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if !h.authz.Authorize(req, acl.OpDelete, acl.Topic(name)) {
			if t.name == nil {
				rt.Topic = nil // named by id: its name is not disclosed
			}
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if topic, ok := h.store.Topic(name); ok {
			rt.TopicID = topic.ID
		}
		if err := h.store.DeleteTopic(ctx, name); err != nil {
			rt.ErrorCode, rt.ErrorMessage = adminErrorCode(err), errMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	h.reconcile()
	return kafka.Reply{Response: resp}, nil
}
