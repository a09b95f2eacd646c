// Package fetch is Shale's read path: Fetch, ListOffsets and
// OffsetForLeaderEpoch. Local data goes from the segment files to the socket
// with sendfile; offsets below the high watermark only are visible.
package fetch

// Fetch (key 1), versions 4-18.
//
//   - v4: IsolationLevel; LastStableOffset and AbortedTransactions. A
//     read_committed (1) consumer reads below the last stable offset and
//     gets the aborted transactions that overlap what it read, from the
//     segments' .txnindex (KIP-98); read_uncommitted (0) reads below the
//     high watermark and gets an empty list. LastStableOffset is the
//     partition's either way.
//   - v5: LogStartOffset in the response.
//   - v7: fetch sessions (KIP-227), with WithSessionCache
//     (session_cache.go): a full fetch at epoch 0 gets a session when the
//     cache has room, and later incremental fetches name only the partitions
//     whose request changed (and ForgottenTopics) and are answered only the
//     partitions with news, and reads only the partitions that may have
//     some (named, not idle at their last read, or changed since: a
//     partition.Watcher per session; session_cache.go);
//     FETCH_SESSION_ID_NOT_FOUND and
//     INVALID_FETCH_SESSION_EPOCH as Kafka answers them. Without a cache,
//     every fetch is answered without a session (session id 0, so clients
//     send full fetches) and an incremental one FETCH_SESSION_ID_NOT_FOUND.
//   - v11: RackId and PreferredReadReplica (KIP-392): followers serve
//     consumers, and leaders name a preferred read replica in the
//     consumer's rack, with the options of read_replica.go; without them
//     PreferredReadReplica is -1 and only leaders serve.
//   - v12: flexible versions; LastFetchedEpoch in the request and
//     DivergingEpoch in the response (KIP-320): a follower whose log has
//     left the leader's gets its partition answered with no records, error
//     NONE, the high watermark and log start, and DivergingEpoch (the
//     leader's largest epoch at or below its last fetched epoch, and where
//     that epoch ends here), at once; it cuts its tail there. SnapshotId
//     stays unset.
//   - v13: topics named by id (KIP-516), in the request (and its forgotten
//     topics) and the response; an id that names no live topic is
//     UNKNOWN_TOPIC_ID for each of its partitions, answered outside any
//     fetch session (fetch_discovery.go). A session keeps its partitions
//     by topic name: a topic deleted and created again under its name
//     while a session names it is answered with the new topic's id.
//   - v14: OFFSET_MOVED_TO_TIERED_STORAGE may be answered (to followers, as
//     before). v15: the replica id comes from ReplicaState (KIP-903).
//   - v16: leader discovery (KIP-951): a partition answered
//     NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries CurrentLeader
//     (the leader and epoch the control plane has), and the response's
//     NodeEndpoints those leaders' endpoints on the client's listener, as
//     Kafka's KafkaApis answers them.
//   - v17: ReplicaDirectoryId (KIP-853) and v18: the follower's
//     HighWatermark (KIP-1166) are read and ignored: a node has one log
//     dir, and Shale's followers send v12.
//
// v13-v18 need WithDirectory; without it Fetch serves up to v12.
//
// A fetch reads each partition from its requested offset up to the high
// watermark, within the partition's max bytes and the response's max bytes
// (the first batch of the first non-empty partition is sent even when it is
// larger, KIP-74). When fewer than min_bytes are ready it waits, woken by the
// high watermark moving (a follower's fetch: the log end) rather than by
// polling, until max_wait_ms (an incremental fetch of a session: woken by
// its Watcher, reading again what it read and what was marked since); a
// wake of a fetch without a session reads again only the partitions whose
// high watermark (log end) moved, the others keep what the first read found
// (reread). At max_wait_ms every partition is read again for the answer.
// That wait, like the wait for cold reads below, is reported with
// kafka.Request.Waited, so the request metrics count it as remote time
// (Kafka's DelayedFetch and DelayedRemoteFetch), not local.
//
// Cold reads (with WithRemote): an offset between the log start (remote) and
// the local log start is read from remote segments. Those reads run
// concurrently, on the RemoteReader's own workers, while the local
// partitions of the same request are read as usual; the fetch waits for them
// up to max(max_wait_ms, the remote min wait) and then answers at once (a
// consumer reading history does not long-poll). A remote read that fails
// answers its partition KAFKA_STORAGE_ERROR, one that is still running
// REQUEST_TIMED_OUT: both retriable, never an empty success. The response's
// LogStartOffset is the remote log start when there is remote data.
//
// Quotas (WithQuotas; consumers only, follower fetches are exempt): the
// response's max bytes are bounded by one window of the consumer_byte_rate
// quota; a response that puts the consumer over its quota carries
// throttle_time_ms (v8+ clients back off themselves, KIP-219) and the
// connection is muted that long. (Kafka answers such a fetch without
// records; see fetchQuota.record.) A principal over its
// shale.remote_fetch_byte_rate gets its remote partitions answered empty,
// at once, throttled, and no remote read starts; within it, each remote
// read is bounded by one response's share of the quota, and the bytes read
// count after the response. The quotas that apply are taken once, at the
// fetch's start: one set or removed during its long poll applies from the
// next fetch.
//
// With an authorizer (WithAuthorizer): a consumer's fetch needs Read on each
// topic, a follower's (replica id >= 0) ClusterAction on the cluster; a
// partition refused is TOPIC_AUTHORIZATION_FAILED, with no records.

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/internal/invariants"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// ConsumeObserver receives per-topic egress figures (metrics). Optional.
type ConsumeObserver interface {
	// Fetched counts record bytes returned to consumers.
	Fetched(topic string, bytes int)
	// Replicated counts record bytes returned to followers.
	Replicated(topic string, bytes int)
}

// RegisterFetch serves Fetch on reg. Options: WithRemote, WithRemoteMinWait.
func RegisterFetch(reg *kafka.Registry, leaders partition.Leaders, obs ConsumeObserver, log *slog.Logger, opts ...Option) {
	h := &fetchHandler{leaders: leaders, obs: obs, log: log, opts: buildOptions(opts)}
	maxVersion := int16(12)
	if h.opts.directory != nil {
		maxVersion = 18
	}
	reg.Register(kmsg.Fetch, 4, maxVersion, h.handle)
}

type fetchHandler struct {
	leaders partition.Leaders
	obs     ConsumeObserver
	log     *slog.Logger
	opts    options

	partReads atomic.Uint64 // partitions read, over every fetch (tests count them)
}

type partResult struct {
	partition int32
	errCode   int16
	hw        int64
	lso       int64 // the last stable offset; -1 with an error
	logStart  int64
	// aborted are the aborted transactions overlapping the records read,
	// for a read_committed fetch.
	aborted []segment.AbortedTxn
	reads   []segment.ReadResult
	cold    [][]byte // pieces of batches read from remote segments, sent in order before reads
	size    int
	// diverging, when set, is the DivergingEpoch answered to a follower
	// whose log has left this one (v12+, KIP-320).
	diverging *divergingEpoch
	// leader, when set, is the CurrentLeader answered with
	// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH (v16+, KIP-951).
	leader *leaderHint
	// preferred, when set, is the PreferredReadReplica the consumer is
	// sent to (v11+, KIP-392; read_replica.go), with no records.
	preferred *int32
	// rep is the replica read, nil when none was; idle reports that the
	// read had nothing to send or tell: no error, no records, and the
	// fetch offset at the bound (the high watermark, the last stable
	// offset for read_committed, the log end for a follower). A session
	// reads an idle partition again only once its replica marks the
	// session's Watcher (session_cache.go).
	rep  *partition.Replica
	idle bool
}

// divergingEpoch is a Fetch response's DivergingEpoch: the leader's largest
// epoch at or below the follower's last fetched epoch, and its end offset.
type divergingEpoch struct {
	epoch     int32
	endOffset int64
}

// coldRead is a partition of a fetch to be read from remote segments.
type coldRead struct {
	topic      string
	partition  int32
	offset     int64
	budget     int
	minOne     bool
	ti, pi     int // where its partResult is
	batches    [][]byte
	release    func() // of batches, once the response is written; nil when there is nothing to release
	err        error
	nextOffset int64
	// committed: a read_committed fetch, which gets the aborted
	// transactions of the range read (from the remote .txnindex, then the
	// local one); rep is the partition's replica.
	committed bool
	rep       *partition.Replica
	aborted   []segment.AbortedTxn
}

// abortedTxnReader is a RemoteReader that knows the aborted transactions
// of the remote segments (tiering/coldread.Reader.AbortedTxns): complete is
// false when the markers of some may lie in local segments.
type abortedTxnReader interface {
	AbortedTxns(ctx context.Context, topic string, partition int32, from, upTo int64) (txns []segment.AbortedTxn, complete bool, err error)
}

// coldAborted finds the aborted transactions overlapping [c.offset,
// c.nextOffset) for a read_committed cold read: in the remote .txnindex
// objects, then, unless those settle it, in the local segments (a marker
// written after the last uploaded segment), each marker once.
func (h *fetchHandler) coldAborted(ctx context.Context, c *coldRead) ([]segment.AbortedTxn, error) {
	var out []segment.AbortedTxn
	complete := false
	if ar, ok := h.opts.remote.(abortedTxnReader); ok {
		var err error
		if out, complete, err = ar.AbortedTxns(ctx, c.topic, c.partition, c.offset, c.nextOffset); err != nil {
			return nil, err
		}
	}
	if complete {
		return out, nil
	}
	seen := make(map[int64]bool, len(out))
	for _, a := range out {
		seen[a.LastOffset] = true
	}
	for _, a := range c.rep.Log().AbortedTxns(c.offset, c.nextOffset) {
		if !seen[a.LastOffset] {
			out = append(out, a)
		}
	}
	return out, nil
}

// sharedRemoteReader is a RemoteReader that can also hand out its batches
// without copying them, as read-only pieces of its cache that stay valid
// until release is called (tiering/coldread.Reader.ReadShared). readCold
// prefers it: a cold fetch then goes from the chunk cache to the socket with
// no copy in between, and the response releases the pieces once written.
type sharedRemoteReader interface {
	ReadShared(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, minOne bool) (batches [][]byte, release func(), nextOffset int64, err error)
}

// coldBody is a Fetch response body that splices pieces of the remote
// reader's cache: it releases them once written. A body that is never
// written (its connection closed first) leaves them to the GC.
type coldBody struct {
	*body
	cold []*coldRead
}

// withColdRelease returns b, wrapped in a coldBody when some cold read
// holds pieces to release.
func withColdRelease(b *body, cold []*coldRead) kafka.BodyWriter {
	for _, c := range cold {
		if c.release != nil {
			return &coldBody{body: b, cold: cold}
		}
	}
	return b
}

func (b *coldBody) WriteTo(w *kafka.ResponseWriter) error {
	defer func() {
		for _, c := range b.cold {
			if c.release != nil {
				c.release()
			}
		}
	}()
	return b.body.WriteTo(w)
}

type topicResult struct {
	topic string
	id    [16]byte // v13+: the topic's id (discover), or the unknown id asked for
	parts []partResult
}

func (h *fetchHandler) handle(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.FetchRequest)
	unknown := h.normalizeFetch(req.Version, r)
	fc := h.sessionContext(req.Version, r)
	if fc.kind == sessionError {
		return kafka.Reply{Body: encodeFetch(req.Version, nil, fc.errCode, invalidSessionID, nil)}, nil
	}
	fc.unknown = unknown
	// The fetch's clock: read here, after each read pass and after each
	// wait, and handed down (readPlan.now, the quota's now) rather than
	// read again by each partition or check.
	now := time.Now()
	deadline := now.Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	fq := h.quotaFor(req, r)
	maxBytes := fq.maxBytes(int(r.MaxBytes))
	if maxBytes <= 0 {
		maxBytes = 1
	}
	if fc.kind == sessionFull {
		fc.watch = partition.NewWatcher()
		fc.watch.Fetched(now)
	}
	plan := &readPlan{listener: req.ListenerName(), watch: fc.watch, now: now}
	if fc.kind == sessionIncremental {
		// Every topic of the session is checked, read or not: a refusal
		// is news for each of its partitions.
		if plan.denied = h.deniedTopicNames(req, r.ReplicaID >= 0, fc.sess.topicNames()); len(plan.denied) > 0 {
			fc.parts = fc.sess.withTopics(fc.parts, plan.denied)
		}
	} else {
		plan.denied = h.deniedTopics(req, r.ReplicaID >= 0, fc.parts)
	}
	res, total, waits, failed, cold := h.readAll(r, fc.parts, maxBytes, true, plan)
	for {
		if fc.kind == sessionIncremental {
			// An incremental fetch waits on its session's Watcher: any
			// change of any of its partitions.
			waits = waitSet{chans: []<-chan struct{}{fc.watch.C()}}
		}
		now = time.Now() // the pass is done
		if fq.admitCold(req, cold, now) {
			// Over the cold-read quota: the remote partitions stay empty
			// and the fetch is answered at once, throttled.
			return h.answer(req, r, fc, fq, res, nil, now), nil
		}
		if len(cold) > 0 {
			coldDeadline := deadline
			if d := now.Add(h.opts.remoteMinWait); d.After(coldDeadline) {
				coldDeadline = d
			}
			waited, end := h.readCold(ctx, res, cold, coldDeadline)
			req.Waited(waited)
			return h.answer(req, r, fc, fq, res, cold, end), nil
		}
		if total >= int(r.MinBytes) || failed || len(waits.chans) == 0 || !now.Before(deadline) || ctx.Err() != nil {
			return h.answer(req, r, fc, fq, res, nil, now), nil
		}
		// The long poll is a wait for data, not work: Kafka's DelayedFetch,
		// counted in the request's remote time.
		woken := waitAny(ctx, req.Draining(), waits.chans, deadline.Sub(now))
		plan.now = time.Now() // the next pass's time
		req.Waited(plan.now.Sub(now))
		if fc.kind == sessionIncremental {
			// Read again what was read, and what changed since.
			fc.parts = fc.sess.more(fc.parts)
		}
		if !woken {
			// Timed out or cancelled: answer with what is there now. (Data
			// that moved below the local log start meanwhile is read from
			// remote at the next fetch.)
			res, _, _, _, _ = h.readAll(r, fc.parts, maxBytes, true, plan)
			return h.answer(req, r, fc, fq, res, nil, plan.now), nil
		}
		if fc.kind == sessionIncremental {
			res, total, waits, failed, cold = h.readAll(r, fc.parts, maxBytes, true, plan)
			continue
		}
		res, total, waits, failed, cold = h.reread(r, fc.parts, res, waits, maxBytes, plan)
	}
}

// readPlan is what readAll needs of the request beyond its partitions: the
// topics its principal may not read, and the client's listener (where a
// preferred read replica is reached).
type readPlan struct {
	denied   map[string]bool
	listener string
	// watch, when set, is registered with every replica read, before it
	// is read (a fetch session's Watcher).
	watch *partition.Watcher
	// now is the time of the read pass, read once by the handler for all
	// its partitions (a follower's fetch time, a preferred replica's
	// choice), as Kafka's readFromLog takes one fetchTimeMs.
	now time.Time
}

// waitSet is what a long poll waits on: a channel for each partition read
// locally (closed when its log end moves, for a follower, or its high
// watermark, for a consumer), and the index of that partition in the
// fetch's parts.
type waitSet struct {
	chans []<-chan struct{}
	idx   []int
}

// reread reads again, after a long poll woke, only the partitions whose
// channel has closed, and puts their results in place in res; the others
// keep theirs, as nothing they wait on moved (a follower learns a high
// watermark that moved meanwhile from its next fetch, as Kafka's do). A
// wake with no closed channel, or a re-read that meets a cold read (data
// moved below the local log start meanwhile), reads every partition again.
// The returned values are readAll's, for the whole fetch.
func (h *fetchHandler) reread(r *kmsg.FetchRequest, parts []partReq, res []topicResult, waits waitSet, maxBytes int, plan *readPlan) ([]topicResult, int, waitSet, bool, []*coldRead) {
	flat := make([]*partResult, 0, len(parts))
	for ti := range res {
		for pi := range res[ti].parts {
			flat = append(flat, &res[ti].parts[pi])
		}
	}
	var sub []partReq
	var subIdx []int
	var keep waitSet
	for j, ch := range waits.chans {
		select {
		case <-ch:
			sub, subIdx = append(sub, parts[waits.idx[j]]), append(subIdx, waits.idx[j])
		default:
			keep.chans, keep.idx = append(keep.chans, ch), append(keep.idx, waits.idx[j])
		}
	}
	if len(flat) != len(parts) || len(sub) == 0 {
		return h.readAll(r, parts, maxBytes, true, plan)
	}
	others := 0
	for _, pr := range flat {
		others += pr.size
	}
	for _, i := range subIdx {
		others -= flat[i].size
	}
	subRes, subTotal, subWaits, failed, cold := h.readAll(r, sub, maxBytes-others, others == 0, plan)
	if len(cold) > 0 {
		return h.readAll(r, parts, maxBytes, true, plan)
	}
	j := 0
	for _, t := range subRes {
		for _, p := range t.parts {
			*flat[subIdx[j]] = p
			j++
		}
	}
	for k, ch := range subWaits.chans {
		keep.chans, keep.idx = append(keep.chans, ch), append(keep.idx, subIdx[subWaits.idx[k]])
	}
	return res, others + subTotal, keep, failed, nil
}

// answer encodes the response to a fetch, counting it (and what its cold
// reads returned) against the consumer's quotas at now. With a session,
// the fetch's partitions are recorded in it (a full fetch's new session)
// or only those with news are answered (an incremental fetch;
// session_cache.go).
func (h *fetchHandler) answer(req *kafka.Request, r *kmsg.FetchRequest, fc *fetchContext, fq *fetchQuota, res []topicResult, cold []*coldRead, now time.Time) kafka.Reply {
	errCode, sessionID := int16(0), invalidSessionID
	switch fc.kind {
	case sessionFull:
		sessionID = h.opts.sessions.create(r.ReplicaID >= 0, fc.watch, fc.parts, res)
	case sessionIncremental:
		var ok bool
		if res, ok = fc.sess.filter(fc.expect, res); ok {
			sessionID = fc.sess.id
		} else {
			errCode, sessionID = errInvalidFetchSessionEpoch, fc.sess.id
		}
	}
	fq.record(req, res, cold, now)
	h.observe(res, r.ReplicaID >= 0)
	res = append(res, fc.unknown...)
	endpoints := h.discover(req, req.Version, res)
	return kafka.Reply{Body: withColdRelease(encodeFetch(req.Version, res, errCode, sessionID, endpoints), cold)}
}

func (h *fetchHandler) observe(res []topicResult, follower bool) {
	if h.obs == nil {
		return
	}
	for _, t := range res {
		n := 0
		for _, p := range t.parts {
			n += p.size
		}
		switch {
		case n == 0:
		case follower:
			h.obs.Replicated(t.topic, n)
		default:
			h.obs.Fetched(t.topic, n)
		}
	}
}

// readCold runs the cold reads concurrently until each finishes or the
// deadline passes, and stores their batches or errors in res. It returns
// how long it waited for them (a wait for the bucket, Kafka's
// DelayedRemoteFetch, which the handler reports as remote time) and when
// the wait ended.
func (h *fetchHandler) readCold(ctx context.Context, res []topicResult, cold []*coldRead, deadline time.Time) (waited time.Duration, end time.Time) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range cold {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.committed {
				defer func() {
					if c.err == nil && c.nextOffset > c.offset {
						c.aborted, c.err = h.coldAborted(ctx, c)
					}
				}()
			}
			if sr, ok := h.opts.remote.(sharedRemoteReader); ok {
				c.batches, c.release, c.nextOffset, c.err = sr.ReadShared(ctx, c.topic, c.partition, c.offset, c.budget, c.minOne)
				return
			}
			var b []byte
			b, c.nextOffset, c.err = h.opts.remote.Read(ctx, c.topic, c.partition, c.offset, c.budget, c.minOne)
			if len(b) > 0 {
				c.batches = [][]byte{b}
			}
		}()
	}
	waitFrom := time.Now()
	wg.Wait()
	end = time.Now()
	waited = end.Sub(waitFrom)
	for _, c := range cold {
		pr := &res[c.ti].parts[c.pi]
		if c.err != nil {
			pr.errCode = kafkaerr.Code(c.err)
			if !errors.Is(c.err, segment.ErrOffsetOutOfRange) {
				h.log.Warn("remote fetch failed", "topic", c.topic, "partition", c.partition, "offset", c.offset, "err", c.err)
			}
			continue
		}
		if len(c.batches) == 0 && c.minOne {
			// Nothing between the remote data and the local log start: a
			// gap the client must not take for an empty success.
			pr.errCode = kerr.KafkaStorageError.Code
			h.log.Warn("no remote or local data at offset", "topic", c.topic, "partition", c.partition, "offset", c.offset)
			continue
		}
		pr.cold, pr.aborted = c.batches, c.aborted
		for _, b := range c.batches {
			pr.size += len(b)
		}
	}
	return waited, end
}

// deniedTopics returns the topics of parts that req's principal may not read
// (all of them for a follower's fetch without ClusterAction), nil when
// none is refused. Each denial is audited once per request.
func (h *fetchHandler) deniedTopics(req *kafka.Request, follower bool, parts []partReq) map[string]bool {
	if !h.opts.authz.Enabled() {
		return nil
	}
	topics := make([]string, 0, 1)
	for i, p := range parts {
		if i == 0 || p.topic != parts[i-1].topic {
			topics = append(topics, p.topic)
		}
	}
	return h.deniedTopicNames(req, follower, topics)
}

// deniedTopicNames is deniedTopics for a list of topic names.
func (h *fetchHandler) deniedTopicNames(req *kafka.Request, follower bool, topics []string) map[string]bool {
	if !h.opts.authz.Enabled() {
		return nil
	}
	var denied map[string]bool
	clusterOK := follower && h.opts.authz.Authorize(req, acl.OpClusterAction, acl.Cluster)
	seen := make(map[string]bool, len(topics))
	for _, topic := range topics {
		if seen[topic] {
			continue
		}
		seen[topic] = true
		if (follower && !clusterOK) || (!follower && !h.opts.authz.Authorize(req, acl.OpRead, acl.Topic(topic))) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[topic] = true
		}
	}
	return denied
}

// readAll reads every partition of parts (the request's, or its session's)
// once, within maxBytes (the first batch read may pass it when minOne,
// KIP-74), and lists those to be read from remote segments (cold) and what
// a long poll waits on for each partition read locally (waits). failed is
// true when some partition carries an error or a DivergingEpoch (the client
// should hear about it at once).
func (h *fetchHandler) readAll(r *kmsg.FetchRequest, parts []partReq, maxBytes int, minOne bool, plan *readPlan) (res []topicResult, total int, waits waitSet, failed bool, cold []*coldRead) {
	if plan == nil {
		plan = &readPlan{now: time.Now()}
	}
	for i := 0; i < len(parts); {
		// One topicResult for each run of partitions of one topic, in the
		// order of parts (as Kafka's response groups them).
		topic := parts[i].topic
		run := i + 1
		for run < len(parts) && parts[run].topic == topic {
			run++
		}
		tr := topicResult{topic: topic, parts: make([]partResult, 0, run-i)}
		for ; i < run; i++ {
			p := parts[i]
			h.partReads.Add(1)
			pr := partResult{partition: p.partition, hw: -1, lso: -1, logStart: -1}
			if plan.denied[topic] {
				pr.errCode, failed = kerr.TopicAuthorizationFailed.Code, true
				tr.parts = append(tr.parts, pr)
				continue
			}
			rep, err := h.leaders.Leader(topic, p.partition)
			if err != nil && r.ReplicaID < 0 && r.Version >= 11 && h.opts.local != nil && errors.Is(err, partition.ErrNotLeader) {
				// KIP-392: a follower serves a consumer that fetches from it.
				if local, lerr := h.opts.local.Assigned(topic, p.partition); lerr == nil {
					rep, err = local, nil
				}
			}
			if err != nil {
				pr.errCode = kafkaerr.Code(err)
				failed = true
				tr.parts = append(tr.parts, pr)
				continue
			}
			if plan.watch != nil && r.ReplicaID < 0 {
				// Before reading: a change after this read marks the
				// session's Watcher. (A follower's fetch registers after
				// its own fetch moved the high watermark, below.)
				rep.Watch(plan.watch)
			}
			pr.rep = rep
			if p.currentLeaderEpoch >= 0 {
				if code := checkEpoch(p.currentLeaderEpoch, rep.LeaderEpoch()); code != 0 {
					pr.errCode, failed = code, true
					tr.parts = append(tr.parts, pr)
					continue
				}
			}
			localStart := rep.Log().LogStartOffset()
			pr.hw, pr.logStart = rep.HighWatermark(), localStart
			pr.lso = min(rep.LastStableOffset(), pr.hw)
			if r.ReplicaID >= 0 {
				// A follower's fetch: its offset is its log end, which moves
				// the high watermark; it reads past the high watermark, up to
				// the log end, and only what is local (section "Replication"
				// in docs/replication.md).
				hw, err := rep.FollowerFetchWatched(r.ReplicaID, p.fetchOffset, p.lastFetchedEpoch, plan.now, plan.watch)
				if plan.watch != nil {
					// After the fetch is counted, which may move the high
					// watermark (no news for this session: it is read
					// again below), before the figures answered are read.
					rep.Watch(plan.watch)
					if err == nil {
						hw = rep.HighWatermark()
						localStart = rep.Log().LogStartOffset()
						pr.logStart, pr.lso = localStart, min(rep.LastStableOffset(), hw)
					}
				}
				var div *partition.DivergedError
				if errors.As(err, &div) {
					// KIP-320: no records, error NONE, the high watermark and
					// log start read above; the follower state did not move.
					pr.diverging, failed = &divergingEpoch{epoch: div.Epoch, endOffset: div.EndOffset}, true
					tr.parts = append(tr.parts, pr)
					continue
				}
				if err != nil {
					pr.errCode, failed = kafkaerr.Code(err), true
					tr.parts = append(tr.parts, pr)
					continue
				}
				pr.hw = hw
				rep.FollowerLogStart(r.ReplicaID, p.logStartOffset)
				if p.fetchOffset < localStart && h.opts.remote != nil {
					if rs := h.opts.remote.LogStartOffset(topic, p.partition); rs >= 0 && rs <= p.fetchOffset {
						// KIP-405: the offset is only in remote segments; the
						// follower takes the remote tail's state from the
						// bucket and fetches from the local log start.
						pr.errCode, failed = kerr.OffsetMovedToTieredStorage.Code, true
						tr.parts = append(tr.parts, pr)
						continue
					}
				}
				waits.chans, waits.idx = append(waits.chans, rep.LEOChanged()), append(waits.idx, i)
				leo := rep.Log().LogEndOffset()
				total += h.readLocal(rep, &pr, topic, p.fetchOffset, min(int(p.maxBytes), maxBytes-total), &minOne, leo, &failed)
				pr.idle = pr.errCode == 0 && pr.size == 0 && p.fetchOffset == leo
				tr.parts = append(tr.parts, pr)
				continue
			}
			rs := int64(-1)
			if h.opts.remote != nil {
				if rs = h.opts.remote.LogStartOffset(topic, p.partition); rs >= 0 && rs < localStart {
					pr.logStart = rs
				}
			}
			if h.opts.selector != nil && r.Version >= 11 {
				inRemote := rs >= 0 && rs <= p.fetchOffset && p.fetchOffset <= h.opts.remote.LastTieredOffset(topic, p.partition)
				if id, ok := h.opts.selector.preferredReplica(rep, plan.listener, r.Rack, p.fetchOffset, inRemote, plan.now); ok {
					// KIP-392: answered at once, no records; the consumer
					// goes to the replica in its rack.
					pr.preferred, failed = &id, true
					tr.parts = append(tr.parts, pr)
					continue
				}
			}
			if rs >= 0 && rs < localStart && p.fetchOffset < localStart {
				// A cold read reserves its budget now: it runs after this
				// pass, concurrently with the other cold reads.
				budget := max(min(int(p.maxBytes), maxBytes-total), 0)
				if budget > 0 || minOne {
					cold = append(cold, &coldRead{topic: topic, partition: p.partition, offset: p.fetchOffset,
						budget: budget, minOne: minOne, ti: len(res), pi: len(tr.parts),
						committed: r.IsolationLevel == 1, rep: rep})
					total += budget
					minOne = false
				}
				tr.parts = append(tr.parts, pr)
				continue
			}
			// The last stable offset moves only with the high watermark
			// (a marker counts once replicated): one wake-up serves both.
			waits.chans, waits.idx = append(waits.chans, rep.HWChanged()), append(waits.idx, i)
			bound := pr.hw
			if r.IsolationLevel == 1 {
				bound = pr.lso
			}
			total += h.readLocal(rep, &pr, topic, p.fetchOffset, min(int(p.maxBytes), maxBytes-total), &minOne, bound, &failed)
			if r.IsolationLevel == 1 && len(pr.reads) > 0 {
				pr.aborted = rep.Log().AbortedTxns(p.fetchOffset, pr.reads[len(pr.reads)-1].NextOffset)
			}
			pr.idle = pr.errCode == 0 && pr.size == 0 && p.fetchOffset == bound
			tr.parts = append(tr.parts, pr)
		}
		res = append(res, tr)
	}
	return res, total, waits, failed, cold
}

// readLocal gathers file ranges of whole batches from off, below maxOffset
// (the high watermark for consumers, the log end for followers), within
// limit bytes (one batch anyway when *minOne). It returns the bytes added.
func (h *fetchHandler) readLocal(rep *partition.Replica, pr *partResult, topic string, off int64, limit int, minOne *bool, maxOffset int64, failed *bool) int {
	added := 0
	for limit > 0 || *minOne {
		rr, err := rep.Log().Read(off, max(limit, 0), maxOffset, *minOne)
		if err != nil {
			if !errors.Is(err, segment.ErrOffsetOutOfRange) {
				h.log.Error("fetch read failed", "topic", topic, "partition", pr.partition, "offset", off, "err", err)
			}
			if len(pr.reads) == 0 {
				pr.errCode, *failed = kafkaerr.Code(err), true
			}
			break
		}
		if rr.Size == 0 {
			if rr.NextOffset <= off {
				break
			}
			off = rr.NextOffset // an empty tail of a closed segment: go on to the next
			continue
		}
		if invariants.Enabled {
			invariants.Check(rr.NextOffset <= maxOffset, "%s-%d: a fetch read up to %d, past its bound %d (the high watermark for consumers)",
				topic, pr.partition, rr.NextOffset, maxOffset)
		}
		pr.reads = append(pr.reads, rr)
		pr.size += rr.Size
		added += rr.Size
		limit -= rr.Size
		*minOne = false
		off = rr.NextOffset
	}
	return added
}

// checkEpoch fences a fetch that names another leader epoch (KIP-320).
func checkEpoch(requested, current int32) int16 {
	switch {
	case requested < current:
		return kerr.FencedLeaderEpoch.Code
	case requested > current:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// waitAny blocks until one of chans is closed (true), or d passes, ctx
// ends or drain is closed (false: the server is stopping).
func waitAny(ctx context.Context, drain <-chan struct{}, chans []<-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		case <-drain:
			return false
		}
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+3)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(drain)})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 3
}

// encodeFetch writes the response body for version v (4-18), with the
// top-level error code, session id (v7+) and the leaders' endpoints
// (v16+).
func encodeFetch(v int16, res []topicResult, errCode int16, sessionID int32, endpoints []partition.NodeEndpoint) *body {
	e := &encoder{b: &body{buf: make([]byte, 0, 256)}, flexible: v >= 12}
	e.i32(0) // ThrottleMillis
	if v >= 7 {
		e.i16(errCode)
		e.i32(sessionID)
	}
	e.arrayLen(len(res))
	for _, t := range res {
		if v >= 13 {
			e.uuid(t.id)
		} else {
			e.str(t.topic)
		}
		e.arrayLen(len(t.parts))
		for _, p := range t.parts {
			e.i32(p.partition)
			e.i16(p.errCode)
			e.i64(p.hw)
			e.i64(p.lso)
			if v >= 5 {
				e.i64(p.logStart)
			}
			e.arrayLen(len(p.aborted)) // AbortedTransactions
			for _, a := range p.aborted {
				e.i64(a.ProducerID)
				e.i64(a.FirstOffset)
				e.tags()
			}
			if v >= 11 {
				if p.preferred != nil {
					e.i32(*p.preferred)
				} else {
					e.i32(-1) // PreferredReadReplica: none
				}
			}
			e.bytesLen(p.size)
			for _, b := range p.cold {
				e.raw(b)
			}
			for _, rr := range p.reads {
				e.file(rr.File, rr.Position, rr.Size)
			}
			e.partitionTags(v, p.diverging, p.leader)
		}
		e.tags()
	}
	if v >= 16 && len(endpoints) > 0 {
		e.nodeEndpointsTag(endpoints)
	} else {
		e.tags()
	}
	return e.finish()
}
