package share

// AlterShareGroupOffsets (key 91), version 0: moves an empty share
// group's share-partitions to new start offsets (NON_EMPTY_GROUP while it
// has members): each gets a new state epoch and nothing in flight, written
// to its share coordinator; the partition leader's older state is fenced
// (FENCED_STATE_EPOCH at its next write) and read again. With an
// authorizer it needs Read on the group and on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleAlterShareGroupOffsets(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterShareGroupOffsetsRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		if code := c.offsetsWriteCheck(req, acl.OpRead, r.GroupID); code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
		for _, rt := range r.Topics {
			t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			t.Topic = rt.Topic
			meta, ok := c.cluster.Topic(rt.Topic)
			t.TopicID = meta.ID
			for _, p := range rt.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				switch {
				case !c.cfg.Authorizer.Authorize(req, acl.OpRead, acl.Topic(rt.Topic)):
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !ok || p.Partition < 0 || p.Partition >= meta.Partitions:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case p.StartOffset < 0:
					rp.ErrorCode = kerr.InvalidRequest.Code
				default:
					if err := c.resetPartition(ctx, StateKey{Group: r.GroupID, TopicID: meta.ID, Partition: p.Partition}, p.StartOffset); err != nil {
						rp.ErrorCode = shareErrCode(err)
					}
				}
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}}, nil
}
