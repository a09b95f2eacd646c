package broker

// CreatePartitions (key 37), versions 0-3.
//
//   - v1: no change here.  v2: flexible versions.  v3: no change here.
//
// The count only grows (INVALID_PARTITIONS otherwise); manual assignments of
// the new partitions are not supported (INVALID_REQUEST).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

func (n *Node) handleCreatePartitions(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		switch {
		case len(t.Assignment) > 0:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, errMessage(fmt.Errorf("manual assignment is not supported"))
		case r.ValidateOnly:
			topic, ok := n.store.Topic(t.Topic)
			if !ok {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if t.Count <= topic.Partitions {
				rt.ErrorCode = kerr.InvalidPartitions.Code
				rt.ErrorMessage = errMessage(fmt.Errorf("topic has %d partitions, asked for %d", topic.Partitions, t.Count))
			}
		default:
			if err := n.store.CreatePartitions(ctx, t.Topic, t.Count); err != nil {
				rt.ErrorCode, rt.ErrorMessage = adminErrorCode(err), errMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !r.ValidateOnly {
		n.reconcile()
	}
	return kafka.Reply{Response: resp}, nil
}
