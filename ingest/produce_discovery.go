package ingest

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// nameTopics names each topic of a v13+ request by its id (KIP-516) and
// returns the ids that name no live topic: their partitions are answered
// UNKNOWN_TOPIC_ID.
func (h *produceHandler) nameTopics(v int16, r *kmsg.ProduceRequest) map[[16]byte]bool {
	if v < 13 || h.directory == nil {
		return nil
	}
	var unknown map[[16]byte]bool
	for i := range r.Topics {
		t := &r.Topics[i]
		if name, ok := h.directory.TopicName(t.TopicID); ok {
			t.Topic = name
			continue
		}
		if unknown == nil {
			unknown = map[[16]byte]bool{}
		}
		unknown[t.TopicID] = true
	}
	return unknown
}

// discover sets, at v10+ (KIP-951), the CurrentLeader of each partition
// answered NOT_LEADER_OR_FOLLOWER, and the response's NodeEndpoints to
// those leaders' endpoints on the client's listener, as Kafka's KafkaApis
// does, so that the producer moves to the new leader without asking
// Metadata first. topics are the request's topic names, in the response's
// order.
func (h *produceHandler) discover(req *kafka.Request, topics []string, resp *kmsg.ProduceResponse) {
	if h.directory == nil || req.Version < 10 {
		return
	}
	seen := map[int32]bool{}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			lh, ok := h.directory.CurrentLeader(topics[ti], rp.Partition, req.ListenerName())
			if !ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = lh.Leader, lh.LeaderEpoch
			if ep := lh.Endpoint; ep != nil && !seen[ep.NodeID] {
				seen[ep.NodeID] = true
				b := kmsg.NewProduceResponseBroker()
				b.NodeID, b.Host, b.Port, b.Rack = ep.NodeID, ep.Host, ep.Port, ep.Rack
				resp.Brokers = append(resp.Brokers, b)
			}
		}
	}
}
