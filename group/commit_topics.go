package group

// The topics of an OffsetCommit or a TxnOffsetCommit, resolved the same
// way for both before they commit: names by id from the version that
// sends ids, Read on each topic, and why a partition is not committed.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// commitTopics is a commit request's topics as the coordinator resolves
// them.
type commitTopics struct {
	c    *Coordinator
	view *topicView
	byID bool
	// names[i] is the request's topic i's name: its id's topic when byID,
	// "" for an unknown id (answered UNKNOWN_TOPIC_ID, not committed).
	names []string
	// denied is the names refused Read, set by deny.
	denied map[string]bool
}

// resolveCommitTopics names a commit request's n topics; topic(i) is
// topic i's name and id as the request holds them, byID whether its
// version names topics by id.
func (c *Coordinator) resolveCommitTopics(byID bool, n int, topic func(i int) (string, topicID)) *commitTopics {
	ct := &commitTopics{c: c, view: c.topicView(), byID: byID, names: make([]string, n)}
	for i := range n {
		name, id := topic(i)
		ct.names[i] = name
		if byID {
			ct.names[i] = ct.view.byID[id]
		}
	}
	return ct
}

// unknown reports whether topic i is an id no topic has.
func (ct *commitTopics) unknown(i int) bool { return ct.byID && ct.names[i] == "" }

// deny checks Read on each topic of a known name, each denial audited
// once: called once the request has passed its group's checks.
func (ct *commitTopics) deny(req *kafka.Request) {
	ct.denied = ct.c.deniedTopics(req, acl.OpRead, func(yield func(string) bool) {
		for i, name := range ct.names {
			if !ct.unknown(i) && !yield(name) {
				return
			}
		}
	})
}

// refused is the code of partition p of topic i when it is not
// committed (UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED or
// UNKNOWN_TOPIC_OR_PARTITION, in that order), else 0.
func (ct *commitTopics) refused(i int, p int32) int16 {
	switch {
	case ct.unknown(i):
		return kerr.UnknownTopicID.Code
	case ct.denied[ct.names[i]]:
		return kerr.TopicAuthorizationFailed.Code
	case ct.c.missing(ct.view, ct.names[i], p):
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}

// answers hands out the code of each partition of the request in turn:
// its refused code, else the next of codes, the group's codes for the
// partitions committed, in request order. Call it once per partition of
// the request, in request order.
func (ct *commitTopics) answers(codes []int16) func(i int, p int32) int16 {
	next := 0
	return func(i int, p int32) int16 {
		if code := ct.refused(i, p); code != 0 {
			return code
		}
		next++
		return codes[next-1]
	}
}

// topicIDs is the ids of the known topics by name, written with the
// offsets (KAFKA-19141) and a consumer group member's ownership check;
// nil when the cluster lists no topics.
func (ct *commitTopics) topicIDs() map[string]topicID {
	if len(ct.view.byName) == 0 {
		return nil
	}
	ids := map[string]topicID{}
	for i, name := range ct.names {
		if !ct.unknown(i) {
			ids[name] = ct.view.byName[name].ID
		}
	}
	return ids
}

// newCommitOffset is a request partition's offset to commit: its leader
// epoch when the version sends one (else -1), its metadata ("" for null).
func newCommitOffset(topic string, partition int32, offset int64, leaderEpoch int32, hasEpoch bool, metadata *string) commitOffset {
	o := commitOffset{tp: topicPartition{topic, partition}, offset: offset, leaderEpoch: -1}
	if hasEpoch {
		o.leaderEpoch = leaderEpoch
	}
	if metadata != nil {
		o.metadata = *metadata
	}
	return o
}
