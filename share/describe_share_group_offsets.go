package share

// DescribeShareGroupOffsets (key 90), versions 0-1: each share-partition's
// start offset (the share-partition start offset, from the persisted
// state; -1 when it has none) and, v1, its lag: records at or above the
// start offset, below the high watermark (the last stable offset for a
// read_committed group), neither acknowledged nor archived: the end from
// the partition's replica when this node leads it, else from its leader
// (Config.EndOffsets, one ListOffsets per topic, as Kafka's group
// coordinator asks the partition leaders), -1 when neither answers.
// Null topics: every topic the group's members subscribed to. With an
// authorizer it needs Describe on the group and on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleDescribeShareGroupOffsets(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeShareGroupOffsetsRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, rg := range r.Groups {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID = rg.GroupID
			if !c.cfg.Authorizer.Authorize(req, acl.OpDescribe, acl.Group(rg.GroupID)) {
				g.ErrorCode = kerr.GroupAuthorizationFailed.Code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			if code := c.groupCheck(rg.GroupID, false); code != 0 {
				g.ErrorCode = code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			topics := rg.Topics
			if topics == nil {
				for _, name := range c.groupTopics(rg.GroupID) {
					if meta, ok := c.cluster.Topic(name); ok {
						topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: partitionRange(meta.Partitions)})
					}
				}
			}
			lags := map[string]map[int32]PartitionLag{} // the share-partitions in memory here
			if c.parts != nil {
				for _, pl := range c.parts.Lag(rg.GroupID) {
					if lags[pl.Topic] == nil {
						lags[pl.Topic] = map[int32]PartitionLag{}
					}
					lags[pl.Topic][pl.Partition] = pl
				}
			}
			for _, rt := range topics {
				t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				t.Topic = rt.Topic
				meta, ok := c.cluster.Topic(rt.Topic)
				t.TopicID = meta.ID
				// Partitions whose lag needs the leader's end, and their
				// persisted state.
				var ask []int32
				states := map[int32]*Snapshot{}
				for _, p := range rt.Partitions {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
					switch {
					case !c.cfg.Authorizer.Authorize(req, acl.OpDescribe, acl.Topic(rt.Topic)):
						rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					case !ok || p < 0 || p >= meta.Partitions:
						rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					case c.persister() != nil:
						s, err := c.persister().Load(ctx, StateKey{Group: rg.GroupID, TopicID: meta.ID, Partition: p})
						if err != nil {
							rp.ErrorCode = shareErrCode(err)
						} else if s != nil {
							rp.StartOffset, rp.LeaderEpoch = s.StartOffset, s.LeaderEpoch
						}
						if pl, ok := lags[rt.Topic][p]; ok {
							rp.Lag = pl.Lag
						} else if s != nil && s.StartOffset >= 0 {
							if end, ok := c.parts.lagEndOf(rg.GroupID, rt.Topic, p); ok {
								rp.Lag = max(end-s.StartOffset-doneCount(s, end), 0)
							} else {
								ask, states[p] = append(ask, p), s
							}
						}
					}
					t.Partitions = append(t.Partitions, rp)
				}
				if len(ask) > 0 && c.cfg.EndOffsets != nil {
					ends, err := c.cfg.EndOffsets(ctx, rt.Topic, ask, c.cfg.group(rg.GroupID).readCommitted)
					if err != nil {
						c.cfg.Logger.Debug("share group lag: end offsets from the leaders", "group", rg.GroupID, "topic", rt.Topic, "err", err)
					}
					for i := range t.Partitions {
						rp := &t.Partitions[i]
						s, asked := states[rp.Partition]
						if end, ok := ends[rp.Partition]; asked && ok {
							rp.Lag = max(end-s.StartOffset-doneCount(s, end), 0)
						}
					}
				}
				g.Topics = append(g.Topics, t)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}}, nil
}
