package fetch

// OffsetForLeaderEpoch (key 23), versions 0-4.
//
//   - v1: LeaderEpoch in the response (the largest epoch <= the requested one).
//   - v2: CurrentLeaderEpoch in the request: FENCED_LEADER_EPOCH when it is
//     older than this leader's, UNKNOWN_LEADER_EPOCH when newer.
//   - v3: ReplicaID (followers); v4 flexible versions.
//
// The answer is the end offset of the requested epoch: the start offset of
// the next larger epoch, or the log end offset for the latest one (KIP-101,
// KIP-279). A follower truncates its divergent tail there. A leader has its
// own epoch in its history from its election, at its log end then
// (partition.Replica.SetLeadership), so before its first write it answers
// its epoch, and any epoch between its last written one and its own, with
// its log end, as Kafka's does; UNDEFINED is left for an epoch above the
// leader's.
//
// With an authorizer (WithAuthorizer): ClusterAction on the cluster (a
// follower) allows every topic; otherwise each topic needs Describe, else
// its partitions are TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
)

// RegisterOffsetForLeaderEpoch serves OffsetForLeaderEpoch on reg.
// Options: WithAuthorizer.
func RegisterOffsetForLeaderEpoch(reg *kafka.Registry, leaders partition.Leaders, log *slog.Logger, opts ...Option) {
	az := buildOptions(opts).authz
	reg.Register(kmsg.OffsetForLeaderEpoch, 0, 4, func(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
		r := req.Msg.(*kmsg.OffsetForLeaderEpochRequest)
		resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		cluster := az.Permits(req, acl.OpClusterAction, acl.Cluster)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			allowed := cluster || az.Authorize(req, acl.OpDescribe, acl.Topic(t.Topic))
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition = p.Partition
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				rep, err := leaders.Leader(t.Topic, p.Partition)
				switch {
				case !allowed:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case err != nil:
					rp.ErrorCode = kafkaerr.Code(err)
				case p.CurrentLeaderEpoch >= 0 && checkEpoch(p.CurrentLeaderEpoch, rep.LeaderEpoch()) != 0:
					rp.ErrorCode = checkEpoch(p.CurrentLeaderEpoch, rep.LeaderEpoch())
				default:
					rp.LeaderEpoch, rp.EndOffset = rep.Log().EndOffsetForEpoch(p.LeaderEpoch)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return kafka.Reply{Response: resp}, nil
	})
}
