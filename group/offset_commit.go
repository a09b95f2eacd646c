package group

// OffsetCommit (key 8), versions 0-10.
//
//   - v1: Generation, MemberID (and a per-partition timestamp, ignored).
//   - v2-v4: RetentionTimeMillis (ignored: offsets live until deleted).
//   - v5: no retention.  v6: LeaderEpoch per partition.
//   - v7: GroupInstanceID (KIP-345).  v8: flexible versions.
//   - v9: a member of a KIP-848 consumer group commits with its member
//     epoch as the generation (below v9 it gets UNSUPPORTED_VERSION): an
//     unknown member is UNKNOWN_MEMBER_ID, and an epoch that is not the
//     member's is STALE_MEMBER_EPOCH, except an epoch between the
//     member's previous and current one when every partition committed is
//     still the member's (a commit sent before the heartbeat answer that
//     moved it on, as KIP-1251 allows).
//   - v10: topics by TopicID instead of name, in the request and the
//     answer (KIP-848, KAFKA-14690). An id no topic has is UNKNOWN_TOPIC_ID
//     for its partitions, not committed, and decided before the topic
//     ACLs, as Kafka does; a partition the topic does not have is
//     UNKNOWN_TOPIC_OR_PARTITION. Offsets are kept by topic name, as for
//     v0-v9, so OffsetFetch answers them whichever version committed them.
//
// At every version a topic the cluster does not have, or a partition its
// topic does not have, is UNKNOWN_TOPIC_OR_PARTITION and not committed, as
// Kafka answers it (KafkaApis checks its metadata cache): a consumer still
// committing a topic that was just deleted must not leave an offset that a
// topic created again under the name would resume from (deleted_topics.go).
//
// A commit with generation -1 and no member id is a simple commit,
// accepted only while the group has no members. Otherwise the member must
// be known (UNKNOWN_MEMBER_ID) and of the current generation
// (ILLEGAL_GENERATION); during CompletingRebalance commits get
// REBALANCE_IN_PROGRESS, while during PreparingRebalance they are accepted
// (members commit what they processed before they rejoin). The offsets are
// appended to __consumer_offsets as one batch and answered once the high
// watermark passes it; only then are they applied to the group's state, so
// that OffsetFetch never answers an offset that a failover could lose. A
// commit not replicated within offsets.commit.timeout.ms is answered
// NOT_COORDINATOR and never applied (a later load of the partition may
// still find it, as in Kafka).
//
// With an authorizer it needs Read on the group (else every partition is
// GROUP_AUTHORIZATION_FAILED) and Read on each topic: the partitions of a
// topic refused are TOPIC_AUTHORIZATION_FAILED and not committed, the others
// are. A request whose topics are all refused (unknown ids, or denied)
// is answered without the group, as Kafka answers it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// commitRequest is an OffsetCommit's fields, owned by the group.
type commitRequest struct {
	memberID      string
	instanceID    *string
	generation    int32
	offsets       []commitOffset
	version       int16
	transactional bool               // TxnOffsetCommit: no OffsetCommit version rule
	topicIDs      map[string]topicID // the topics' ids, for a consumer group's ownership check
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
		ct := c.resolveCommitTopics(req.Version >= 10, len(r.Topics), func(i int) (string, topicID) { return r.Topics[i].Topic, r.Topics[i].TopicID })
		failAll := func(code int16) kmsg.Response {
			resp.Topics = resp.Topics[:0]
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
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
		if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
			return failAll(kerr.GroupAuthorizationFailed.Code), nil
		}
		ct.deny(req)
		committable := false
		for i, t := range r.Topics {
			for _, p := range t.Partitions {
				committable = committable || ct.refused(i, p.Partition) == 0
			}
		}
		if len(r.Topics) > 0 && !committable {
			failAll(0)
			for ti, t := range resp.Topics {
				for pi, p := range t.Partitions {
					resp.Topics[ti].Partitions[pi].ErrorCode = ct.refused(ti, p.Partition)
				}
			}
			return resp, nil
		}
		simple := r.MemberID == "" && (req.Version < 1 || r.Generation < 0)
		rn, err := c.lookup(r.Group, simple)
		switch {
		case err != nil:
			return failAll(errorCode(err)), nil
		case rn == nil:
			return failAll(kerr.UnknownMemberID.Code), nil // a member's commit to a group that does not exist
		}
		cr := commitRequest{memberID: r.MemberID, instanceID: r.InstanceID, generation: r.Generation, version: req.Version, topicIDs: ct.topicIDs()}
		if req.Version < 1 {
			cr.generation = -1
		}
		for i, t := range r.Topics {
			for _, p := range t.Partitions {
				if ct.refused(i, p.Partition) != 0 {
					continue // answered UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED or UNKNOWN_TOPIC_OR_PARTITION, not committed
				}
				cr.offsets = append(cr.offsets, newCommitOffset(ct.names[i], p.Partition, p.Offset, p.LeaderEpoch, req.Version >= 6, p.Metadata))
			}
		}
		var written map[topicPartition]offsetEntry // set on the group's goroutine, read by then
		return c.callThen(ctx, rn, func(g *group, send replyFn) {
			var codes []int16
			var hw int64
			codes, written, hw = g.commit(cr)
			answer := ct.answers(codes)
			failAll(0)
			for ti, t := range resp.Topics {
				for pi, p := range t.Partitions {
					resp.Topics[ti].Partitions[pi].ErrorCode = answer(ti, p.Partition)
				}
			}
			send(resp, hw)
		}, func(g *group) { g.applyReplicated(written) },
			func() kmsg.Response { return failAll(kerr.NotCoordinator.Code) })
	}}, nil
}

// commit validates an OffsetCommit and appends its offsets: a code per
// offset, in order, the entries written (not yet applied: applyReplicated
// does that once they are replicated) and the offset to wait for (-1 when
// nothing was written).
func (g *group) commit(cr commitRequest) ([]int16, map[topicPartition]offsetEntry, int64) {
	codes := make([]int16, len(cr.offsets))
	all := func(code int16) ([]int16, map[topicPartition]offsetEntry, int64) {
		for i := range codes {
			codes[i] = code
		}
		return codes, nil, -1
	}
	var m *member
	switch {
	case g.state == StateDead:
		return all(kerr.CoordinatorNotAvailable.Code)
	case g.isShare():
		return all(kerr.GroupIDNotFound.Code) // a share group commits no offsets (Kafka's ShareGroup.validateOffsetCommit)
	case g.consumer != nil:
		if code := g.consumer.validateCommit(cr); code != 0 {
			return all(code)
		}
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
	recs, entries, tps := g.offsetRecords(cr, codes)
	if len(recs) == 0 {
		return codes, nil, -1
	}
	hw, err := g.persist(recs)
	if err != nil {
		failUnset(codes, err)
		return codes, nil, -1
	}
	g.counters.committed(len(entries))
	written := make(map[topicPartition]offsetEntry, len(entries))
	for i, e := range entries {
		e.logOffset = hw // later in the request wins, as in the log
		written[tps[i]] = e
		g.unreplicated[tps[i]] = e
	}
	return codes, written, hw
}

// offsetRecords is the records that commit cr's offsets, with their
// entries and partitions in order; an offset whose metadata is over
// the limit gets OFFSET_METADATA_TOO_LARGE in codes and no record.
func (g *group) offsetRecords(cr commitRequest, codes []int16) ([]record, []offsetEntry, []topicPartition) {
	var recs []record
	var entries []offsetEntry
	var tps []topicPartition
	for i, o := range cr.offsets {
		if len(o.metadata) > g.limits.MaxMetadataBytes {
			codes[i] = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		e := offsetEntry{offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata, commitTimestamp: g.now.UnixMilli(), topicID: cr.topicIDs[o.tp.topic]}
		recs = append(recs, record{key: offsetKey(g.id, o.tp), value: offsetValue(e)})
		entries, tps = append(entries, e), append(tps, o.tp)
	}
	return recs, entries, tps
}

// failUnset gives each offset not already refused err's code (an append
// that failed).
func failUnset(codes []int16, err error) {
	for i := range codes {
		if codes[i] == 0 {
			codes[i] = errorCode(err)
		}
	}
}

// applyReplicated applies commits whose append is replicated. An entry
// loses to what the group holds from a later append of the same
// partition (a commit that was answered first, or a tombstone), so that
// commits answered out of order never move an offset back.
func (g *group) applyReplicated(written map[topicPartition]offsetEntry) {
	for tp, e := range written {
		if u, ok := g.unreplicated[tp]; ok && u.logOffset <= e.logOffset {
			delete(g.unreplicated, tp)
		}
		if at, ok := g.deletedAt[tp]; ok && at > e.logOffset {
			continue
		}
		if cur, ok := g.offsets[tp]; ok && cur.logOffset > e.logOffset {
			continue
		}
		delete(g.deletedAt, tp) // what is older than e now loses to e
		g.offsets[tp] = e
	}
}

// forgetOffset drops tp's offset (a tombstone appended at logOffset),
// applied, not yet replicated, or pending in a transaction: a tombstone
// drops the pending transactional offsets of its partition, as Kafka's
// replay of one does (so a transaction committed after it does not bring
// the partition's offset back), and as a load replays it (readPartition).
func (g *group) forgetOffset(tp topicPartition, logOffset int64) {
	delete(g.offsets, tp)
	delete(g.unreplicated, tp)
	for pid, pend := range g.pendingTxn {
		delete(pend, tp)
		if len(pend) == 0 {
			delete(g.pendingTxn, pid)
		}
	}
	g.deletedAt[tp] = logOffset
}

// latestOffsets is, per partition, the last offset appended for it (applied
// or not yet replicated): what a compaction snapshot must keep.
func (g *group) latestOffsets() map[topicPartition]offsetEntry {
	out := make(map[topicPartition]offsetEntry, len(g.offsets)+len(g.unreplicated))
	for tp, e := range g.offsets {
		out[tp] = e
	}
	for tp, e := range g.unreplicated {
		if cur, ok := out[tp]; !ok || e.logOffset > cur.logOffset {
			out[tp] = e
		}
	}
	return out
}
