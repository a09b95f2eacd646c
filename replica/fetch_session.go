package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower fetcher's side of its incremental fetch session with the
// leader (KIP-227, Kafka's FetchSessionHandler): the first Fetch is full
// (session epoch 0: every partition named) and asks for a session; once
// the leader grants one, each Fetch names only the partitions added or
// whose request changed (fetch offset, log start, current leader epoch,
// last fetched epoch, max bytes) and forgets those the fetcher no longer
// fetches (paused, truncating, bootstrapping, or not followed any more).
// The leader reads every partition of the session and answers only those
// with news: records, an error, a DivergingEpoch, or a high watermark or
// log start that moved. A partition absent from an answer had nothing to
// apply. Any failure (no answer, a top-level error, FETCH_SESSION_ID_NOT_FOUND
// after a leader restart or an eviction, INVALID_FETCH_SESSION_EPOCH), and
// any change of a partition's role or replica (fetcher.set), sends the
// next Fetch full again, closing the old session.
//
// REQUIRES: owned by the fetcher goroutine.
type followerSession struct {
	id    int32 // 0: none
	epoch int32 // of the next Fetch; 0: the next Fetch is full
	// sent is what the leader's session holds for each partition (valid
	// while epoch > 0).
	sent map[replicaKey]partFetch
	// inNext is the set of the last built Fetch's partitions (made only
	// when the session holds a partition the Fetch left out), forgotten
	// the session's partitions it left out, and changed the indexes in
	// next of those the Fetch named; all are kept for their storage, so
	// that a round of an idle session allocates nothing in proportion to
	// its partitions. An idle round costs one lookup in sent per
	// partition.
	inNext    map[replicaKey]struct{}
	forgotten []replicaKey
	changed   []int
}

// partFetch is what one partition's Fetch asks.
type partFetch struct {
	fetchOffset, logStartOffset        int64
	leaderEpoch, lastFetchedEpoch, max int32
}

// wanted is one partition of a round's Fetch.
type wanted struct {
	key replicaKey
	partFetch
}

// reset makes the next Fetch full, closing the current session (the
// leader frees its slot).
func (s *followerSession) reset() {
	s.epoch, s.sent = 0, nil
}

// build fills req with next: the session metadata, and every partition for
// a full Fetch, or the added and changed ones and ForgottenTopics for an
// incremental one. It returns whether the Fetch is full.
func (s *followerSession) build(req *kmsg.FetchRequest, next []wanted) (full bool) {
	full = s.epoch <= 0
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	if full {
		req.SessionEpoch = 0
	}
	topics := map[string]int{}
	s.forgotten, s.changed = s.forgotten[:0], s.changed[:0]
	held := 0 // partitions of next the session holds
	for i, w := range next {
		prev, ok := s.sent[w.key]
		if ok {
			held++
		}
		if full || !ok || prev != w.partFetch {
			addPartition(req, topics, w)
			s.changed = append(s.changed, i)
		}
	}
	if full || held == len(s.sent) {
		// next holds every partition of the session (it names each key
		// once): nothing to forget.
		return full
	}
	if s.inNext == nil {
		s.inNext = make(map[replicaKey]struct{}, len(next))
	}
	clear(s.inNext)
	for _, w := range next {
		s.inNext[w.key] = struct{}{}
	}
	forgotten := map[string]int{}
	for k := range s.sent {
		if _, ok := s.inNext[k]; ok {
			continue
		}
		s.forget(req, forgotten, k)
	}
	return false
}

// buildPartial fills req for an incremental Fetch of a round that visited
// only some partitions: next are those of them that fetch, skipped those
// that do not (forgotten if the session holds them); every other partition
// the session holds stays in it as it is, unnamed. It returns how many
// those are. REQUIRES: an established session (epoch > 0).
func (s *followerSession) buildPartial(req *kmsg.FetchRequest, next []wanted, skipped []replicaKey) (held int) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	topics := map[string]int{}
	s.forgotten, s.changed = s.forgotten[:0], s.changed[:0]
	named := 0 // of next, partitions the session holds
	for i, w := range next {
		prev, ok := s.sent[w.key]
		if ok {
			named++
		}
		if !ok || prev != w.partFetch {
			addPartition(req, topics, w)
			s.changed = append(s.changed, i)
		}
	}
	forgotten := map[string]int{}
	for _, k := range skipped {
		if _, ok := s.sent[k]; ok {
			s.forget(req, forgotten, k)
		}
	}
	return len(s.sent) - named - len(s.forgotten)
}

// holds reports whether the session holds w's request as it is.
func (s *followerSession) holds(w wanted) bool {
	prev, ok := s.sent[w.key]
	return s.epoch > 0 && ok && prev == w.partFetch
}

// holdsKey reports whether the session holds partition k.
func (s *followerSession) holdsKey(k replicaKey) bool {
	_, ok := s.sent[k]
	return s.epoch > 0 && ok
}

// addPartition names w in req (topics indexes req.Topics by name).
func addPartition(req *kmsg.FetchRequest, topics map[string]int, w wanted) {
	i, ok := topics[w.key.topic]
	if !ok {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = w.key.topic
		req.Topics = append(req.Topics, t)
		i = len(req.Topics) - 1
		topics[w.key.topic] = i
	}
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.CurrentLeaderEpoch = w.key.partition, w.leaderEpoch
	fp.FetchOffset, fp.LogStartOffset = w.fetchOffset, w.logStartOffset
	fp.LastFetchedEpoch, fp.PartitionMaxBytes = w.lastFetchedEpoch, w.max
	req.Topics[i].Partitions = append(req.Topics[i].Partitions, fp)
}

// forget puts k in req's ForgottenTopics (forgotten indexes them by topic)
// and in s.forgotten.
func (s *followerSession) forget(req *kmsg.FetchRequest, forgotten map[string]int, k replicaKey) {
	s.forgotten = append(s.forgotten, k)
	i, ok := forgotten[k.topic]
	if !ok {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic = k.topic
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
		i = len(req.ForgottenTopics) - 1
		forgotten[k.topic] = i
	}
	req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
}

// answered records the leader's answer to a Fetch of next built with
// build(full): ok is false when the answer carries no partitions to apply
// (a session error), and err is set for a top-level error that is not a
// session's (the round failed).
func (s *followerSession) answered(resp *kmsg.FetchResponse, next []wanted, full bool) (ok bool, err error) {
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code:
		s.id = 0
		s.reset()
		return false, nil
	case kerr.InvalidFetchSessionEpoch.Code:
		s.reset()
		return false, nil
	default:
		s.reset()
		return false, kerr.ErrorForCode(resp.ErrorCode)
	}
	if resp.SessionID == 0 || (!full && resp.SessionID != s.id) {
		// Declined (no slot), or closed by the leader: full fetches on.
		s.id = 0
		s.reset()
		return true, nil
	}
	s.id, s.epoch = resp.SessionID, nextSessionEpoch(s.epoch)
	if full || s.sent == nil {
		// The leader's session holds exactly next. (After reset, sent
		// is nil; the map is made once per full Fetch, not per round.)
		s.sent = make(map[replicaKey]partFetch, len(next))
		for _, w := range next {
			s.sent[w.key] = w.partFetch
		}
		return true, nil
	}
	// It holds what it held, without the forgotten partitions, with the
	// requests of those the Fetch named.
	for _, k := range s.forgotten {
		delete(s.sent, k)
	}
	for _, i := range s.changed {
		s.sent[next[i].key] = next[i].partFetch
	}
	return true, nil
}

// nextSessionEpoch is the epoch after e (after 2^31-1 comes 1).
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}
