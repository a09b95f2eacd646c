package share

// WriteShareGroupState (key 85), versions 0-1: a share-partition leader
// persists a share-partition's state with its share coordinator. Shale
// writes the whole state each time, as a ShareSnapshot record, answered
// once replicated. v1: DeliveryCompleteCount (ignored: derived from the
// batches). FENCED_STATE_EPOCH for an older state epoch, NOT_COORDINATOR
// when this node does not lead the key's partition. Inter-broker:
// ClusterAction on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *StateCoordinator) handleWriteShareGroupState(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.WriteShareGroupStateRequest)
	denied := !c.authz.Authorize(req, acl.OpClusterAction, acl.Cluster)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				if denied {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				s := Snapshot{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
				for _, b := range p.StateBatches {
					s.Batches = append(s.Batches, StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: DeliveryState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
				}
				if err := c.Write(ctx, StateKey{Group: r.GroupID, TopicID: t.TopicID, Partition: p.Partition}, s); err != nil {
					rp.ErrorCode = stateErrCode(err)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}}, nil
}
