package admin

// DeleteRecords (key 21), versions 0-2.
//
//   - v2: flexible versions.
//
// Moves each partition's log start offset up to the requested offset (-1
// means the high watermark), deleting whole segments below it. An offset
// above the high watermark is OFFSET_OUT_OF_RANGE. On a tiered topic the
// new log start is committed to the remote metadata before anything is
// deleted (tiering.Manager.DeleteRecordsBefore): cold reads, EARLIEST,
// remote retention, followers and later leaders start there.
//
// With an authorizer, each topic needs Delete (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
)

func (h *Handlers) handleDeleteRecords(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		allowed := h.authz.Authorize(req, authz.OpDelete, authz.Topic(t.Topic))
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if !allowed {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rep, err := h.replicas.Leader(t.Topic, p.Partition)
			if err == nil {
				off := p.Offset
				if off == -1 {
					off = rep.HighWatermark()
				}
				if h.tiering != nil {
					// Tiered: the new log start goes into the remote metadata first.
					rp.LowWatermark, err = h.tiering.DeleteRecordsBefore(ctx, rep, off)
				} else {
					rp.LowWatermark, err = rep.DeleteRecordsBefore(off)
				}
			}
			rp.ErrorCode = kafkaerr.Code(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Reply{Response: resp}, nil
}
