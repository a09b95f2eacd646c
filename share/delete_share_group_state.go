package share

// DeleteShareGroupState (key 86), version 0: removes share-partitions'
// state (a tombstone each), for DeleteGroups and DeleteShareGroupOffsets.
// Inter-broker: ClusterAction on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *StateCoordinator) handleDeleteShareGroupState(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteShareGroupStateRequest)
	denied := !c.authz.Authorize(req, acl.OpClusterAction, acl.Cluster)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				if denied {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else if err := c.Delete(ctx, StateKey{Group: r.GroupID, TopicID: t.TopicID, Partition: p.Partition}); err != nil {
					rp.ErrorCode = stateErrCode(err)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}}, nil
}
