package txn

// DescribeProducers (key 61), version 0 (KIP-664).
//
// Served by a partition's leader: the producers in its producer state
// (idempotent and transactional), each with its epoch, last sequence,
// last timestamp, the coordinator epoch of its last marker and the first
// offset of its open transaction (-1 when none), which is how an operator
// finds a hanging transaction (`shale producer describe TOPIC`).
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION per partition.
//
// With an authorizer (az; nil allows everything) each topic needs Read, else
// its partitions are TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// RegisterDescribeProducers serves DescribeProducers on reg from leaders.
func RegisterDescribeProducers(reg *kafka.Registry, leaders partition.Leaders, az *authz.Authorizer) {
	reg.Register(kmsg.DescribeProducers, 0, 0, func(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
		r := req.Msg.(*kmsg.DescribeProducersRequest)
		resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			allowed := az.Authorize(req, acl.OpRead, acl.Topic(t.Topic))
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = p
				if !allowed {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				rep, err := leaders.Leader(t.Topic, p)
				if err != nil {
					rp.ErrorCode = ErrorCode(err)
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				for _, pi := range rep.Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.ProducerEpoch), pi.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, pi.CoordinatorEpoch, pi.CurrentTxnStartOffset
					rp.ActiveProducers = append(rp.ActiveProducers, ap)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return kafka.Reply{Response: resp}, nil
	})
}
