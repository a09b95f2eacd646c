package share

// ReadShareGroupState (key 84), version 0: a share-partition leader reads
// the persisted state of its share-partitions from their share
// coordinator (this node, when it leads the key's __share_group_state
// partition; NOT_COORDINATOR otherwise). A share-partition without state
// answers StateEpoch 0, StartOffset -1 and no batches, as Kafka does for
// an uninitialized one. Inter-broker: ClusterAction on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *StateCoordinator) handleReadShareGroupState(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ReadShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	denied := !c.authz.Authorize(req, acl.OpClusterAction, acl.Cluster)
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StartOffset = p.Partition, -1
			s, code := c.readFor(denied, StateKey{Group: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			rp.ErrorCode = code
			if s != nil {
				rp.StateEpoch, rp.StartOffset = s.StateEpoch, s.StartOffset
				for _, b := range s.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.State), b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Reply{Response: resp}, nil
}

// readFor reads a share-partition's state for ReadShareGroupState and
// ReadShareGroupStateSummary: the state (nil when it has none) and the
// code to answer, CLUSTER_AUTHORIZATION_FAILED when denied.
func (c *StateCoordinator) readFor(denied bool, key StateKey) (*Snapshot, int16) {
	if denied {
		return nil, kerr.ClusterAuthorizationFailed.Code
	}
	s, err := c.Read(key)
	if err != nil {
		return nil, stateErrCode(err)
	}
	return s, 0
}
