package share

// ReadShareGroupStateSummary (key 87), versions 0-1: the start offset,
// state epoch and leader epoch of share-partitions (DescribeShareGroupOffsets
// asks it); v1: DeliveryCompleteCount, the records at or above the start
// offset that are acknowledged or archived. A share-partition without state
// answers StartOffset -1. Inter-broker: ClusterAction on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *StateCoordinator) handleReadShareGroupStateSummary(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	denied := !c.authz.Authorize(req, acl.OpClusterAction, acl.Cluster)
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch = p.Partition, -1, -1
			s, code := c.readFor(denied, StateKey{Group: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			rp.ErrorCode = code
			if s != nil {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = s.StateEpoch, s.LeaderEpoch, s.StartOffset
				rp.DeliveryCompleteCount = 0 // counted below; -1 (the default) says unknown
				for _, b := range s.Batches {
					if b.State == Acknowledged || b.State == Archived {
						rp.DeliveryCompleteCount += int32(b.Last - b.First + 1)
					}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kafka.Reply{Response: resp}, nil
}
