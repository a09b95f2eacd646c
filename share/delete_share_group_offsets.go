package share

// DeleteShareGroupOffsets (key 92), version 0: forgets an empty share
// group's progress on whole topics (NON_EMPTY_GROUP while it has
// members): each share-partition starts over at share.auto.offset.reset
// the next time it is fetched (a new state epoch with no start offset; the
// leader's older state is fenced). With an authorizer it needs Delete on
// the group and Read on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleDeleteShareGroupOffsets(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteShareGroupOffsetsRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		if code := c.offsetsWriteCheck(req, acl.OpDelete, r.GroupID); code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
		for _, rt := range r.Topics {
			t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			t.Topic = rt.Topic
			meta, ok := c.cluster.Topic(rt.Topic)
			t.TopicID = meta.ID
			switch {
			case !c.cfg.Authorizer.Authorize(req, acl.OpRead, acl.Topic(rt.Topic)):
				t.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !ok:
				t.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				for p := range meta.Partitions {
					if err := c.resetPartition(ctx, StateKey{Group: r.GroupID, TopicID: meta.ID, Partition: p}, -1); err != nil {
						t.ErrorCode = shareErrCode(err)
						break
					}
				}
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}}, nil
}
