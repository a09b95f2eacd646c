package group

// OffsetCommit (key 8), versions 0-8.
//
//   - v1: Generation, MemberID (and a per-partition timestamp, ignored).
//   - v2-v4: RetentionTimeMillis (ignored: offsets live until deleted).
//   - v5: no retention.  v6: LeaderEpoch per partition.
//   - v7: GroupInstanceID (KIP-345).  v8: flexible versions.
//
// A commit with generation -1 and no member id is a simple commit,
// accepted only while the group has no members. Otherwise the member must
// be known (UNKNOWN_MEMBER_ID) and of the current generation
// (ILLEGAL_GENERATION); during CompletingRebalance commits get
// REBALANCE_IN_PROGRESS, while during PreparingRebalance they are accepted
// (members commit what they processed before they rejoin). The offsets are
// appended to __consumer_offsets as one batch and answered once the high
// watermark passes it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// commitRequest is an OffsetCommit's fields, owned by the group.
type commitRequest struct {
	memberID   string
	instanceID *string
	generation int32
	offsets    []commitOffset
}

type commitOffset struct {
	tp          topicPartition
	offset      int64
	leaderEpoch int32
	metadata    string
}

func (c *Coordinator) handleOffsetCommit(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.OffsetCommitRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		failAll := func(code int16) kmsg.Response {
			resp.Topics = resp.Topics[:0]
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		if r.Group == "" {
			return failAll(kerr.InvalidGroupID.Code), nil
		}
		simple := r.MemberID == "" && (req.Version < 1 || r.Generation < 0)
		rn, err := c.lookup(r.Group, simple)
		switch {
		case err != nil:
			return failAll(errorCode(err)), nil
		case rn == nil:
			return failAll(kerr.UnknownMemberID.Code), nil // a member's commit to a group that does not exist
		}
		cr := commitRequest{memberID: r.MemberID, instanceID: r.InstanceID, generation: r.Generation}
		if req.Version < 1 {
			cr.generation = -1
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				md := ""
				if p.Metadata != nil {
					md = *p.Metadata
				}
				epoch := p.LeaderEpoch
				if req.Version < 6 {
					epoch = -1
				}
				cr.offsets = append(cr.offsets, commitOffset{tp: topicPartition{t.Topic, p.Partition}, offset: p.Offset, leaderEpoch: epoch, metadata: md})
			}
		}
		return c.call(ctx, rn, func(g *group, send replyFn) {
			codes, hw := g.commit(cr)
			i := 0
			failAll(0)
			for ti := range resp.Topics {
				for pi := range resp.Topics[ti].Partitions {
					resp.Topics[ti].Partitions[pi].ErrorCode = codes[i]
					i++
				}
			}
			send(resp, hw)
		}, func() kmsg.Response { return failAll(kerr.NotCoordinator.Code) })
	}}, nil
}

// commit applies an OffsetCommit: a code per offset, in order, and the
// offset to wait for (-1 when nothing was written).
func (g *group) commit(cr commitRequest) ([]int16, int64) {
	codes := make([]int16, len(cr.offsets))
	all := func(code int16) ([]int16, int64) {
		for i := range codes {
			codes[i] = code
		}
		return codes, -1
	}
	var m *member
	switch {
	case g.state == StateDead:
		return all(kerr.CoordinatorNotAvailable.Code)
	case cr.instanceID != nil && g.validateInstance(cr.instanceID, cr.memberID) != 0:
		return all(g.validateInstance(cr.instanceID, cr.memberID))
	case cr.generation < 0 && cr.memberID == "":
		if len(g.members) > 0 {
			return all(kerr.UnknownMemberID.Code)
		}
	default:
		var ok bool
		if m, ok = g.members[cr.memberID]; !ok {
			return all(kerr.UnknownMemberID.Code)
		}
		if cr.generation != g.generation {
			return all(kerr.IllegalGeneration.Code)
		}
		g.touch(m)
		if g.state == StateCompletingRebalance {
			return all(kerr.RebalanceInProgress.Code)
		}
	}
	var recs []record
	var entries []commitOffset
	for i, o := range cr.offsets {
		if len(o.metadata) > g.limits.MaxMetadataBytes {
			codes[i] = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		recs = append(recs, record{key: offsetKey(g.id, o.tp), value: offsetValue(offsetEntry{
			offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata, commitTimestamp: g.now.UnixMilli()})})
		entries = append(entries, o)
	}
	if len(recs) == 0 {
		return codes, -1
	}
	hw, err := g.persist(recs)
	if err != nil {
		for i := range codes {
			if codes[i] == 0 {
				codes[i] = errorCode(err)
			}
		}
		return codes, -1
	}
	for _, o := range entries {
		g.offsets[o.tp] = offsetEntry{offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata, commitTimestamp: g.now.UnixMilli()}
	}
	return codes, hw
}
