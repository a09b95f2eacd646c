package fetch

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// WithDirectory gives Fetch the cluster's metadata (partition.Directory):
// with it Fetch serves v13-v18, which name topics by id (KIP-516) and,
// from v16, answer a partition that is NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH with its current leader and that leader's endpoint
// (KIP-951). Without it Fetch serves up to v12.
func WithDirectory(d partition.Directory) Option {
	return func(o *options) { o.directory = d }
}

// leaderHint is a Fetch response partition's CurrentLeader (v12+, tag 1).
type leaderHint struct {
	id, epoch int32
}

// normalizeFetch prepares a v13+ request for the handler, which reads
// topics by name and the replica id from ReplicaID: it takes the replica id
// from ReplicaState at v15+ (KIP-903), names each topic (and forgotten
// topic) by its id, and removes the topics whose id names no live topic,
// returning them as results answered UNKNOWN_TOPIC_ID (outside any fetch
// session, as they name nothing to keep in one).
func (h *fetchHandler) normalizeFetch(v int16, r *kmsg.FetchRequest) (unknown []topicResult) {
	if v >= 15 {
		r.ReplicaID = r.ReplicaState.ID
	}
	if v < 13 || h.opts.directory == nil {
		return nil
	}
	known := r.Topics[:0]
	for _, t := range r.Topics {
		name, ok := h.opts.directory.TopicName(t.TopicID)
		if !ok {
			tr := topicResult{id: t.TopicID}
			for _, p := range t.Partitions {
				tr.parts = append(tr.parts, partResult{partition: p.Partition, errCode: kerr.UnknownTopicID.Code, hw: -1, lso: -1, logStart: -1})
			}
			unknown = append(unknown, tr)
			continue
		}
		t.Topic = name
		known = append(known, t)
	}
	r.Topics = known
	forgotten := r.ForgottenTopics[:0]
	for _, t := range r.ForgottenTopics {
		if name, ok := h.opts.directory.TopicName(t.TopicID); ok {
			t.Topic = name
			forgotten = append(forgotten, t)
		}
	}
	r.ForgottenTopics = forgotten
	return unknown
}

// discover completes the results of a fetch at version v before they are
// encoded: each topic's id (v13+), and (v16+) the current leader of each
// partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, as
// Kafka's KafkaApis answers them. It returns the endpoints of those
// leaders, for the response's NodeEndpoints.
func (h *fetchHandler) discover(req *kafka.Request, v int16, res []topicResult) []partition.NodeEndpoint {
	d := h.opts.directory
	if d == nil || v < 13 {
		return nil
	}
	var endpoints []partition.NodeEndpoint
	seen := map[int32]bool{}
	for ti := range res {
		t := &res[ti]
		if t.id == ([16]byte{}) && t.topic != "" {
			t.id, _ = d.TopicID(t.topic)
		}
		if v < 16 {
			continue
		}
		for pi := range t.parts {
			p := &t.parts[pi]
			if p.errCode != kerr.NotLeaderForPartition.Code && p.errCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			lh, ok := d.CurrentLeader(t.topic, p.partition, req.ListenerName())
			if !ok {
				lh = partition.LeaderHint{Leader: -1, LeaderEpoch: -1}
			}
			p.leader = &leaderHint{id: lh.Leader, epoch: lh.LeaderEpoch}
			if ep := lh.Endpoint; ep != nil && !seen[ep.NodeID] {
				seen[ep.NodeID] = true
				endpoints = append(endpoints, *ep)
			}
		}
	}
	return endpoints
}
