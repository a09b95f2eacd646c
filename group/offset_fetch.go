package group

// OffsetFetch (key 9), versions 0-10.
//
//   - v1: offsets from __consumer_offsets (v0 read ZooKeeper's; both are
//     served the same here).  v2: top-level ErrorCode; null topics fetch
//     every committed offset of the group.  v5: LeaderEpoch.
//   - v6: flexible versions.  v7: RequireStable (KIP-447): a partition
//     with a transactional offset waiting for its transaction's marker
//     answers UNSTABLE_OFFSET_COMMIT, which the client retries, so that a
//     consumer taking over a partition never starts from an offset that a
//     commit in flight is about to move.  v8: several groups per request.
//   - v9: MemberID and MemberEpoch per group (KIP-848): a member of a
//     consumer group asking is checked as Kafka checks it, the group
//     answering UNKNOWN_MEMBER_ID for an unknown member and
//     STALE_MEMBER_EPOCH for an epoch that is not the member's; no member
//     id (an admin client) is never checked.
//   - v10: topics by TopicID instead of name, in the request and the
//     answer (KIP-848, KAFKA-14691). An id no topic has answers
//     UNKNOWN_TOPIC_ID for its partitions (offset -1), decided before the
//     topic ACLs, as Kafka does. Offsets are kept by topic name, so those
//     committed at any version are answered. Asked for every committed
//     offset, a topic that no longer exists (no id to name it by) is left
//     out, as Kafka leaves it out.
//
// An offset committed for another topic of the same name (its topic id,
// recorded with it since KAFKA-19141, is not the topic's id now: the
// topic was deleted and created again) is no offset, at every version:
// -1 when the partition is named, left out when every offset is asked for,
// as Kafka 4.1 answers an id that differs. Such offsets are also deleted
// when the coordinator learns of the deletion (deleted_topics.go); an
// offset written without an id (by an older Shale) is answered by name.
//
// A partition without a committed offset answers offset -1. A group this
// node does not coordinate answers NOT_COORDINATOR (per group in v8, at the
// top in v2-v7, per partition in v0-v1).
//
// With an authorizer it needs Describe on the group
// (GROUP_AUTHORIZATION_FAILED) and on each topic: a topic named and refused
// answers TOPIC_AUTHORIZATION_FAILED, and asked for every committed offset
// the refused topics are left out, as Kafka does.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// fetchTopic is one topic of an OffsetFetch; nil partitions: all committed.
type fetchTopic struct {
	topic      string
	partitions []int32
}

// fetchedOffset is one answer of an OffsetFetch.
type fetchedOffset struct {
	tp       topicPartition
	entry    offsetEntry
	found    bool
	unstable bool // RequireStable and a transactional offset is pending
	denied   bool // the principal may not Describe the topic
}

// authorizeOffsets applies Describe on the topics to fetched offsets: with
// every committed offset asked for (all), the topics refused are left out
// quietly; a topic named and refused is answered TOPIC_AUTHORIZATION_FAILED.
func (c *Coordinator) authorizeOffsets(req *kafka.Request, got []fetchedOffset, all bool) []fetchedOffset {
	if !c.cfg.Authorizer.Enabled() {
		return got
	}
	verdict := map[string]bool{}
	out := got[:0]
	for _, f := range got {
		ok, seen := verdict[f.tp.topic]
		if !seen {
			if all {
				ok = c.cfg.Authorizer.Permits(req, acl.OpDescribe, acl.Topic(f.tp.topic))
			} else {
				ok = c.allowed(req, acl.OpDescribe, acl.Topic(f.tp.topic))
			}
			verdict[f.tp.topic] = ok
		}
		switch {
		case ok:
		case all:
			continue
		default:
			f = fetchedOffset{tp: f.tp, denied: true}
		}
		out = append(out, f)
	}
	return out
}

func (c *Coordinator) handleOffsetFetch(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.OffsetFetchRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		if req.Version >= 8 {
			byID := req.Version >= 10
			view := c.topicView()
			for _, rg := range r.Groups {
				var ts []fetchTopic
				var unknownIDs []kmsg.OffsetFetchRequestGroupTopic // v10: answered UNKNOWN_TOPIC_ID
				if rg.Topics != nil {
					ts = []fetchTopic{}
					for _, t := range rg.Topics {
						name := t.Topic
						if byID {
							if name = view.byID[t.TopicID]; name == "" {
								unknownIDs = append(unknownIDs, t)
								continue
							}
						}
						ts = append(ts, fetchTopic{name, t.Partitions})
					}
				}
				if !c.allowed(req, acl.OpDescribe, acl.Group(rg.Group)) {
					og := kmsg.NewOffsetFetchResponseGroup()
					og.Group, og.ErrorCode = rg.Group, kerr.GroupAuthorizationFailed.Code
					resp.Groups = append(resp.Groups, og)
					continue
				}
				var member *fetchMember
				if req.Version >= 9 && rg.MemberID != nil {
					member = &fetchMember{id: *rg.MemberID, epoch: rg.MemberEpoch}
				}
				got, code, err := c.fetchOffsets(ctx, rg.Group, ts, r.RequireStable, member, view)
				if err != nil {
					return nil, err
				}
				got = c.authorizeOffsets(req, got, ts == nil)
				og := kmsg.NewOffsetFetchResponseGroup()
				og.Group, og.ErrorCode = rg.Group, code
				for _, t := range groupByTopic(got) {
					ot := kmsg.NewOffsetFetchResponseGroupTopic()
					ot.Topic = t[0].tp.topic
					if byID {
						meta, ok := view.byName[ot.Topic]
						if !ok {
							continue // a deleted topic's offsets: no id to name them by
						}
						ot.TopicID = meta.ID
					}
					for _, f := range t {
						op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = f.tp.partition, -1, -1, kmsg.StringPtr("")
						if f.found {
							op.Offset, op.LeaderEpoch, op.Metadata = f.entry.offset, f.entry.leaderEpoch, kmsg.StringPtr(f.entry.metadata)
						}
						if f.unstable {
							op.Offset, op.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
						}
						if f.denied {
							op.ErrorCode = kerr.TopicAuthorizationFailed.Code
						}
						ot.Partitions = append(ot.Partitions, op)
					}
					og.Topics = append(og.Topics, ot)
				}
				if code == 0 {
					for _, t := range unknownIDs {
						ot := kmsg.NewOffsetFetchResponseGroupTopic()
						ot.TopicID = t.TopicID
						for _, p := range t.Partitions {
							op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
							op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p, -1, -1, kmsg.StringPtr("")
							op.ErrorCode = kerr.UnknownTopicID.Code
							ot.Partitions = append(ot.Partitions, op)
						}
						og.Topics = append(og.Topics, ot)
					}
				}
				resp.Groups = append(resp.Groups, og)
			}
			return resp, nil
		}
		var ts []fetchTopic
		if r.Topics != nil || req.Version < 2 {
			ts = []fetchTopic{}
			for _, t := range r.Topics {
				ts = append(ts, fetchTopic{t.Topic, t.Partitions})
			}
		}
		var got []fetchedOffset
		var code int16
		if c.allowed(req, acl.OpDescribe, acl.Group(r.Group)) {
			var err error
			got, code, err = c.fetchOffsets(ctx, r.Group, ts, req.Version >= 7 && r.RequireStable, nil, c.topicView())
			if err != nil {
				return nil, err
			}
			got = c.authorizeOffsets(req, got, ts == nil)
		} else {
			code = kerr.GroupAuthorizationFailed.Code
		}
		resp.ErrorCode = code
		if code != 0 && req.Version < 2 {
			// No top-level code before v2: put it on every partition.
			for _, t := range ts {
				for _, p := range t.partitions {
					got = append(got, fetchedOffset{tp: topicPartition{t.topic, p}})
				}
			}
		}
		for _, t := range groupByTopic(got) {
			ot := kmsg.NewOffsetFetchResponseTopic()
			ot.Topic = t[0].tp.topic
			for _, f := range t {
				op := kmsg.NewOffsetFetchResponseTopicPartition()
				op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = f.tp.partition, -1, -1, kmsg.StringPtr("")
				if f.found {
					op.Offset, op.LeaderEpoch, op.Metadata = f.entry.offset, f.entry.leaderEpoch, kmsg.StringPtr(f.entry.metadata)
				}
				if req.Version < 2 {
					op.ErrorCode = code
				}
				if f.unstable {
					op.Offset, op.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
				}
				if f.denied {
					op.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
		return resp, nil
	}}, nil
}

// fetchOffsets reads one group's committed offsets: those of topics, or
// all with nil topics. A non-zero code is the group's error. With
// requireStable, partitions with a pending transactional offset are
// marked unstable. Offsets of another topic than view's by their name are
// not answered (answerOffsets).
func (c *Coordinator) fetchOffsets(ctx context.Context, groupID string, topics []fetchTopic, requireStable bool, member *fetchMember, view *topicView) ([]fetchedOffset, int16, error) {
	rn, err := c.lookup(groupID, false)
	if err != nil {
		return nil, errorCode(err), nil
	}
	if rn == nil {
		if member != nil && member.epoch >= 0 {
			return nil, kerr.UnknownMemberID.Code, nil
		}
		return answerOffsets(nil, topics, view), 0, nil
	}
	var got []fetchedOffset
	code := int16(0)
	_, err = c.call(ctx, rn, func(g *group, send replyFn) {
		if g.isShare() {
			// A share group keeps no committed offsets (Kafka's
			// ShareGroup.validateOffsetFetch).
			code = kerr.GroupIDNotFound.Code
			send(nil, -1)
			return
		}
		if member != nil && g.consumer != nil {
			if code = g.consumer.validateFetch(*member); code != 0 {
				send(nil, -1)
				return
			}
		}
		got = answerOffsets(g.offsets, topics, view)
		if requireStable {
			for i := range got {
				got[i].unstable = g.unstable(got[i].tp)
			}
		}
		send(nil, -1)
	}, func() kmsg.Response { code = kerr.NotCoordinator.Code; return nil })
	return got, code, err
}

// answerOffsets picks the asked offsets out of committed (all of them for
// nil topics), sorted by topic and partition. An offset view says belongs
// to another topic of its name (view.current) is not found, and left out
// of all.
func answerOffsets(committed map[topicPartition]offsetEntry, topics []fetchTopic, view *topicView) []fetchedOffset {
	var out []fetchedOffset
	if topics == nil {
		for tp, e := range committed {
			if view.current(tp.topic, e) {
				out = append(out, fetchedOffset{tp: tp, entry: e, found: true})
			}
		}
	}
	for _, t := range topics {
		for _, p := range t.partitions {
			tp := topicPartition{t.topic, p}
			e, ok := committed[tp]
			if ok && !view.current(tp.topic, e) {
				e, ok = offsetEntry{}, false
			}
			out = append(out, fetchedOffset{tp: tp, entry: e, found: ok})
		}
	}
	slices.SortStableFunc(out, func(a, b fetchedOffset) int {
		return cmp.Or(cmp.Compare(a.tp.topic, b.tp.topic), cmp.Compare(a.tp.partition, b.tp.partition))
	})
	return out
}

// groupByTopic splits sorted offsets into runs of one topic each.
func groupByTopic(fs []fetchedOffset) [][]fetchedOffset {
	var out [][]fetchedOffset
	for i := 0; i < len(fs); {
		j := i
		for j < len(fs) && fs[j].tp.topic == fs[i].tp.topic {
			j++
		}
		out = append(out, fs[i:j])
		i = j
	}
	return out
}

// fetchMember is the member an OffsetFetch v9 names.
type fetchMember struct {
	id    string
	epoch int32
}
