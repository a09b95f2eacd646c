package fetch

// Incremental fetch sessions (KIP-227), the leader's side: a bounded cache
// of sessions, each remembering the partitions a fetcher follows, what it
// last asked for them and what it was last told, so that an incremental
// Fetch names only the partitions whose request changed and its answer
// carries only the partitions with news. Kafka's FetchSessionCache,
// FetchSession and CachedPartition (kafka.server.FetchSession) are the
// model; the rules are theirs:
//
//   - Request metadata (SessionId, SessionEpoch): epoch 0 is a full fetch
//     that asks for a new session (closing SessionId's, if named); epoch -1
//     is a full fetch without a session (closing SessionId's); epoch > 0 is
//     an incremental fetch of session SessionId at that epoch.
//   - A full fetch that asks for one gets a session when the cache has a
//     free slot or can evict one; else the answer says session 0 and the
//     client goes on with full fetches. A new session expects epoch 1 next.
//   - An incremental fetch of an unknown session is answered
//     FETCH_SESSION_ID_NOT_FOUND; one at another epoch than the session
//     expects, INVALID_FETCH_SESSION_EPOCH (both with no partitions and
//     session 0: the client starts over with a full fetch). Otherwise the
//     partitions it names are added to the session or replace their cached
//     request, ForgottenTopics are removed, the epoch moves on (after
//     2^31-1 comes 1), and the partitions that may have news are read. A
//     session left with no partitions is closed and the fetch answered
//     without one.
//   - Which partitions are read (Shale's, where Kafka reads every
//     partition of the session at each fetch): those the request names,
//     those whose last read was not idle (it had records, an error, a
//     DivergingEpoch, a preferred replica, a cold read, or data left
//     behind the response's limit), and those whose replica changed since
//     (partition.Watcher: every replica read in a session has the
//     session's Watcher, and marks it at each append, high watermark, log
//     start, role, ISR or config change). An idle partition (its fetch
//     offset at the high watermark, for a follower the log end, and no
//     error) that nothing marked has nothing new to say: it costs a fetch
//     nothing. The long poll of an incremental fetch waits on the
//     Watcher's one channel and reads, at each wake, the partitions marked
//     since. A follower's idle partition counts as fetched caught up at
//     each of the session's fetches (partition.Replica.FollowerFetchWatched).
//   - An incremental answer carries a partition only when it has news:
//     records, an error, a DivergingEpoch, or a high watermark, last stable
//     offset or log start offset other than the one last sent. A partition
//     answered with an error has its cached high watermark reset, so that it
//     is sent again once the error is gone. Partitions that were answered
//     move to the end of the session's order, so that a response's byte
//     limit does not starve the ones behind them.
//   - Eviction, when a new session needs a slot in a full cache (Kafka's
//     tryEvict): the least recently used session if unused for longer than
//     the eviction time (120 s, Kafka's
//     min.incremental.fetch.session.eviction.ms); else, among the sessions
//     created longer ago than that time (for a follower's new session, also
//     any consumer's session), the least valuable by (privileged, partition
//     count, id), if the new session is more valuable. Followers' sessions
//     (replica id >= 0) are privileged. Kafka keeps the evictable sets in
//     trees updated on each use; this cache scans its at most
//     max.incremental.fetch.session.cache.slots sessions when a new one
//     needs room, judging "created longer ago" at that moment.
//
// Shale serves Fetch up to v12: topics are named, not given by topic id
// (v13+), so a session never has to answer UNKNOWN_TOPIC_ID or
// FETCH_SESSION_TOPIC_ID_ERROR.

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/partition"
)

// Kafka's FetchMetadata constants.
const (
	invalidSessionID int32 = 0  // no session
	initialEpoch     int32 = 0  // a full fetch asking for a session
	finalEpoch       int32 = -1 // a full fetch without a session
)

// DefaultSessionCacheSlots is Kafka's max.incremental.fetch.session.cache.slots.
const DefaultSessionCacheSlots = 1000

// DefaultSessionEviction is Kafka's min.incremental.fetch.session.eviction.ms.
const DefaultSessionEviction = 120 * time.Second

// nextEpoch is the session epoch after e (FetchMetadata.nextEpoch).
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return finalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// SessionCache holds a leader's incremental fetch sessions. Its methods are
// safe for concurrent use. Lock order: the cache's mu, then a session's mu;
// the cache's mu is never taken with a session's held.
type SessionCache struct {
	maxEntries int
	evictAfter time.Duration
	now        func() time.Time

	mu         sync.Mutex
	sessions   map[int32]*session
	partitions int // cached partitions over all sessions (their cachedSize)

	evictions atomic.Uint64
}

// NewSessionCache returns a cache of at most slots sessions (Kafka's
// max.incremental.fetch.session.cache.slots; 0 declines every session).
func NewSessionCache(slots int) *SessionCache {
	return newSessionCache(slots, DefaultSessionEviction, time.Now)
}

func newSessionCache(slots int, evictAfter time.Duration, now func() time.Time) *SessionCache {
	return &SessionCache{maxEntries: max(slots, 0), evictAfter: evictAfter, now: now, sessions: map[int32]*session{}}
}

// SessionCacheStats are the cache's figures (Kafka's FetchSessionCache
// metrics).
type SessionCacheStats struct {
	Sessions   int    // NumIncrementalFetchSessions
	Partitions int    // NumIncrementalFetchPartitionsCached
	Evictions  uint64 // IncrementalFetchSessionEvictionsPerSec, as a total
}

// Stats returns the cache's figures now. A nil cache has none.
func (c *SessionCache) Stats() SessionCacheStats {
	if c == nil {
		return SessionCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return SessionCacheStats{Sessions: len(c.sessions), Partitions: c.partitions, Evictions: c.evictions.Load()}
}

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// cachedPart is one partition of a session: the request last made for it,
// and the figures last answered.
type cachedPart struct {
	tp
	req reqData
	// What the fetcher was last told; -1 before it was told anything (and
	// hw after an error, so that the partition is sent once it clears).
	hw, lso, logStart int64
	// rep is the replica of the partition's last read, registered with
	// the session's Watcher; nil when that read found none.
	rep *partition.Replica
	// idle: the last read found nothing to send and nothing to tell; the
	// partition is read again only when named, or when rep marks the
	// session's Watcher.
	idle bool
	seq  uint64 // read order, lowest first: answered partitions go last
}

// reqData is what a fetch asks of one partition.
type reqData struct {
	fetchOffset        int64
	logStartOffset     int64 // the follower's
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

// session is one incremental fetch session.
type session struct {
	id         int32
	privileged bool
	created    time.Time

	// Guarded by the cache's mu.
	lastUsed   time.Time
	cachedSize int // len(parts) when last touched

	// w is told which of the session's replicas changed (immutable).
	w *partition.Watcher

	mu      sync.Mutex
	epoch   int32 // the epoch the next incremental fetch must carry; REQUIRES: mu held
	index   map[tp]*cachedPart
	busy    map[*cachedPart]struct{} // not idle at their last read: read at each fetch
	topics  map[string]int           // partitions of each topic in index
	nextSeq uint64
}

// sessionKind is how a fetch uses sessions.
type sessionKind int

const (
	sessionless        sessionKind = iota // no session: answer everything, session 0
	sessionFull                           // a full fetch asking for a session
	sessionIncremental                    // an incremental fetch of an existing session
	sessionError                          // a session error: answer it, no partitions
)

// fetchContext is a fetch's session decision, made when the request
// arrives (Kafka's FetchContext).
type fetchContext struct {
	kind    sessionKind
	errCode int16    // for sessionError
	sess    *session // for sessionIncremental
	expect  int32    // for sessionIncremental: the session's epoch after this fetch
	// parts is what to read, in order: the request's partitions, or for an
	// incremental fetch the session's.
	parts []partReq
	// unknown are the topics of a v13+ fetch whose id names no topic,
	// answered UNKNOWN_TOPIC_ID after the others (normalizeFetch).
	unknown []topicResult
	// watch is the Watcher every replica read registers with: the
	// session's, or for a full fetch asking for one, the new session's.
	watch *partition.Watcher
}

// partReq is one partition to read.
type partReq struct {
	tp
	reqData
}

// newContext decides how the fetch r (its partitions in parts, its
// forgotten ones in forgotten) uses sessions. privileged is true for a
// follower's fetch. c may be nil: every fetch is then sessionless.
func (c *SessionCache) newContext(sessionID, epoch int32, parts []partReq, forgotten []tp, privileged bool) *fetchContext {
	if epoch == initialEpoch || epoch == finalEpoch {
		if sessionID != invalidSessionID && c != nil {
			c.remove(sessionID)
		}
		if epoch == finalEpoch || c == nil || c.maxEntries == 0 {
			return &fetchContext{kind: sessionless, parts: parts}
		}
		return &fetchContext{kind: sessionFull, parts: parts}
	}
	if c == nil {
		return &fetchContext{kind: sessionError, errCode: errFetchSessionIDNotFound}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sessionID]
	if s == nil {
		return &fetchContext{kind: sessionError, errCode: errFetchSessionIDNotFound}
	}
	s.mu.Lock()
	if s.epoch != epoch {
		s.mu.Unlock()
		return &fetchContext{kind: sessionError, errCode: errInvalidFetchSessionEpoch}
	}
	visit := map[*cachedPart]struct{}{}
	for _, p := range parts {
		cp := s.index[p.tp]
		if cp != nil {
			cp.req = p.reqData
		} else {
			cp = &cachedPart{tp: p.tp, req: p.reqData, hw: -1, lso: -1, logStart: -1, seq: s.nextSeq}
			s.nextSeq++
			s.index[p.tp] = cp
			s.topics[p.topic]++
		}
		visit[cp] = struct{}{}
	}
	for _, f := range forgotten {
		if cp := s.index[f]; cp != nil {
			s.dropLocked(cp)
			delete(visit, cp)
		}
	}
	if len(s.index) == 0 {
		s.mu.Unlock()
		c.removeLocked(s)
		return &fetchContext{kind: sessionless, parts: parts}
	}
	for cp := range s.busy {
		visit[cp] = struct{}{}
	}
	s.w.Fetched(c.now())
	s.markedLocked(visit)
	s.epoch = nextEpoch(s.epoch)
	expect := s.epoch
	read := readOrder(visit)
	s.mu.Unlock()
	c.touchLocked(s, c.now())
	return &fetchContext{kind: sessionIncremental, sess: s, expect: expect, parts: read, watch: s.w}
}

// markedLocked adds to visit the session's partitions whose replica marked
// its Watcher since the last call. REQUIRES: s.mu held.
func (s *session) markedLocked(visit map[*cachedPart]struct{}) {
	for _, r := range s.w.Take() {
		if cp := s.index[tp{r.Topic(), r.Partition()}]; cp != nil {
			visit[cp] = struct{}{}
		}
	}
}

// readOrder lists visit in the session's read order.
func readOrder(visit map[*cachedPart]struct{}) []partReq {
	cps := make([]*cachedPart, 0, len(visit))
	for cp := range visit {
		cps = append(cps, cp)
	}
	slices.SortFunc(cps, func(a, b *cachedPart) int { return cmp.Compare(a.seq, b.seq) })
	read := make([]partReq, len(cps))
	for i, cp := range cps {
		read[i] = partReq{tp: cp.tp, reqData: cp.req}
	}
	return read
}

// more returns parts with the session's partitions marked since it was
// made added (a long poll woke, or ends): what the fetch reads again. It
// returns parts itself when nothing of the session was marked.
func (s *session) more(parts []partReq) []partReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	visit := make(map[*cachedPart]struct{}, len(parts))
	for _, p := range parts {
		if cp := s.index[p.tp]; cp != nil {
			visit[cp] = struct{}{}
		}
	}
	n := len(visit)
	s.markedLocked(visit)
	if len(visit) == n {
		return parts
	}
	return readOrder(visit)
}

// dropLocked removes cp from the session. REQUIRES: s.mu held.
func (s *session) dropLocked(cp *cachedPart) {
	delete(s.index, cp.tp)
	delete(s.busy, cp)
	if s.topics[cp.topic]--; s.topics[cp.topic] <= 0 {
		delete(s.topics, cp.topic)
	}
	if cp.rep != nil {
		cp.rep.Unwatch(s.w)
	}
}

// topicNames lists the session's topics.
func (s *session) topicNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.topics))
	for t := range s.topics {
		out = append(out, t)
	}
	return out
}

// withTopics returns parts with every partition of the session's topics in
// topics added (refused topics: each of their partitions is answered).
func (s *session) withTopics(parts []partReq, topics map[string]bool) []partReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	visit := make(map[*cachedPart]struct{}, len(parts))
	for _, p := range parts {
		if cp := s.index[p.tp]; cp != nil {
			visit[cp] = struct{}{}
		}
	}
	for k, cp := range s.index {
		if topics[k.topic] {
			visit[cp] = struct{}{}
		}
	}
	return readOrder(visit)
}

// Kafka's session error codes.
const (
	errFetchSessionIDNotFound   int16 = 70 // FETCH_SESSION_ID_NOT_FOUND
	errInvalidFetchSessionEpoch int16 = 71 // INVALID_FETCH_SESSION_EPOCH
)

// create makes a session for a full fetch whose answer is res, if there is
// a slot or one can be evicted, and returns its id (invalidSessionID if
// none). Every partition answered is cached with what it was told.
func (c *SessionCache) create(privileged bool, w *partition.Watcher, parts []partReq, res []topicResult) int32 {
	n := 0
	for _, t := range res {
		n += len(t.parts)
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxEntries && !c.tryEvictLocked(privileged, n, now) {
		for _, t := range res {
			for _, p := range t.parts {
				if p.rep != nil {
					p.rep.Unwatch(w)
				}
			}
		}
		return invalidSessionID
	}
	if w == nil {
		w = partition.NewWatcher()
	}
	s := &session{id: c.newIDLocked(), privileged: privileged, created: now, epoch: nextEpoch(initialEpoch), w: w,
		index: make(map[tp]*cachedPart, n), busy: map[*cachedPart]struct{}{}, topics: map[string]int{}}
	i := 0
	for _, t := range res {
		for _, p := range t.parts {
			cp := &cachedPart{tp: tp{t.topic, p.partition}, req: parts[i].reqData, hw: -1, lso: -1, logStart: -1}
			i++
			if s.index[cp.tp] != nil {
				continue // named twice in the request: the first stands
			}
			cp.update(&p)
			cp.rep, cp.idle, cp.seq = p.rep, p.idle, s.nextSeq
			s.nextSeq++
			if !cp.idle {
				s.busy[cp] = struct{}{}
			}
			s.index[cp.tp] = cp
			s.topics[cp.topic]++
		}
	}
	s.cachedSize = -1
	c.sessions[s.id] = s
	c.touchLocked(s, now)
	return s.id
}

// newIDLocked is a random positive id no session has. REQUIRES: c.mu held.
func (c *SessionCache) newIDLocked() int32 {
	for {
		id := rand.Int32N(math.MaxInt32-1) + 1
		if c.sessions[id] == nil {
			return id
		}
	}
}

// touchLocked marks s used at now and recounts its partitions.
// REQUIRES: c.mu held, s.mu not held.
func (c *SessionCache) touchLocked(s *session, now time.Time) {
	s.lastUsed = now
	s.mu.Lock()
	size := len(s.index)
	s.mu.Unlock()
	if s.cachedSize > 0 {
		c.partitions -= s.cachedSize
	}
	s.cachedSize = size
	c.partitions += size
}

// remove closes session id, if there is one.
func (c *SessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

// removeLocked drops s. REQUIRES: c.mu held.
func (c *SessionCache) removeLocked(s *session) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	if s.cachedSize > 0 {
		c.partitions -= s.cachedSize
	}
	s.mu.Lock()
	for _, cp := range s.index {
		if cp.rep != nil {
			cp.rep.Unwatch(s.w)
		}
	}
	s.mu.Unlock()
}

// evictableKey orders sessions by value, least first: Kafka's EvictableKey
// (privileged, size, id).
type evictableKey struct {
	privileged bool
	size       int
	id         int32
}

func (a evictableKey) less(b evictableKey) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}

// tryEvictLocked makes room for a new session of size partitions, by
// Kafka's rules (see the top of this file), and reports whether it did.
// REQUIRES: c.mu held.
func (c *SessionCache) tryEvictLocked(privileged bool, size int, now time.Time) bool {
	var lru, victim *session
	var victimKey evictableKey
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id {
			lru = s
		}
		old := now.Sub(s.created) > c.evictAfter
		if !(old || privileged && !s.privileged) {
			continue
		}
		k := evictableKey{privileged: s.privileged, size: s.cachedSize, id: s.id}
		if victim == nil || k.less(victimKey) {
			victim, victimKey = s, k
		}
	}
	if lru == nil {
		return false
	}
	if now.Sub(lru.lastUsed) > c.evictAfter {
		c.removeLocked(lru)
		c.evictions.Add(1)
		return true
	}
	if victim == nil || (evictableKey{privileged: privileged, size: size}).less(victimKey) {
		return false
	}
	c.removeLocked(victim)
	c.evictions.Add(1)
	return true
}

// update records what p told the fetcher, and reports whether p has news
// for it (Kafka's CachedPartition.maybeUpdateResponseData).
func (cp *cachedPart) update(p *partResult) (news bool) {
	news = p.size > 0 || p.diverging != nil || p.preferred != nil
	if cp.hw != p.hw {
		cp.hw, news = p.hw, true
	}
	if cp.lso != p.lso {
		cp.lso, news = p.lso, true
	}
	if cp.logStart != p.logStart {
		cp.logStart, news = p.logStart, true
	}
	if p.errCode != 0 {
		cp.hw, news = -1, true
	}
	return news
}

// filter keeps in res the partitions with news for an incremental fetch of
// s, updating what s remembers of each partition read (its answer, its
// replica, whether it was idle), and moves those answered to the end of
// s's read order. It returns false, changing nothing but marking the
// partitions read to be read again, when another fetch of s came between
// (Kafka answers that INVALID_FETCH_SESSION_EPOCH: a duplicate request).
func (s *session) filter(expect int32, res []topicResult) ([]topicResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != expect {
		for _, t := range res {
			for _, p := range t.parts {
				if cp := s.index[tp{t.topic, p.partition}]; cp != nil {
					s.busy[cp] = struct{}{}
				}
			}
		}
		return nil, false
	}
	out := res[:0]
	for _, t := range res {
		kept := t.parts[:0]
		for _, p := range t.parts {
			cp := s.index[tp{t.topic, p.partition}]
			if cp == nil {
				kept = append(kept, p)
				continue
			}
			if cp.rep != p.rep && cp.rep != nil {
				cp.rep.Unwatch(s.w)
			}
			cp.rep, cp.idle = p.rep, p.idle
			if p.idle {
				delete(s.busy, cp)
			} else {
				s.busy[cp] = struct{}{}
			}
			if cp.update(&p) {
				kept = append(kept, p)
				cp.seq = s.nextSeq
				s.nextSeq++
			}
		}
		if len(kept) > 0 {
			t.parts = kept
			out = append(out, t)
		}
	}
	return out, true
}
