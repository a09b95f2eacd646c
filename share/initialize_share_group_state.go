package share

// InitializeShareGroupState (key 83), version 0: the group coordinator
// initializes a share-partition's state (a start offset and a state
// epoch, nothing in flight). Shale's share-partition leaders initialize
// a share-partition themselves on first use (share.auto.offset.reset), so
// this API is served for other callers and AlterShareGroupOffsets.
// Inter-broker: ClusterAction on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *StateCoordinator) handleInitializeShareGroupState(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.InitializeShareGroupStateRequest)
	denied := !c.authz.Authorize(req, acl.OpClusterAction, acl.Cluster)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				if denied {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else if err := c.Write(ctx, StateKey{Group: r.GroupID, TopicID: t.TopicID, Partition: p.Partition},
					Snapshot{StateEpoch: p.StateEpoch, LeaderEpoch: -1, StartOffset: p.StartOffset}); err != nil {
					rp.ErrorCode = stateErrCode(err)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}}, nil
}
