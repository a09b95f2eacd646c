package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// Replication, follower side: num.replica.fetchers fetchers per source node
// (the leader of the partitions this node follows), each with its own
// connection, partitions spread over them by a stable hash of topic and
// partition (as Kafka's fetcher id), sending Fetch requests that carry this
// node's replica id — the same API and read path as consumers — and
// appending the batches as the leader wrote them. A partition that has just
// become a follower first asks the leader OffsetForLeaderEpoch and cuts only
// its divergent tail (KIP-101, KIP-279). Every Fetch carries the epoch of
// the log's last batch (LastFetchedEpoch); a leader that finds the log has
// left its own answers DivergingEpoch instead of records, and the fetcher
// cuts the tail there, by the same rule, and fetches on (KIP-320). A
// partition whose log ends below the leader's local log start is rebuilt
// from the remote tail instead of copying history (bootstrap.go,
// KIP-405).

// followed is one partition this node follows.
type followed struct {
	rep    *partition.Replica
	leader int32
	epoch  int32
}

// fetchPart is one partition a fetcher replicates: what it follows, and
// its replication state (follow.go), owned by the fetcher goroutine.
// keyedPart is one entry of fetcher.list.
type keyedPart struct {
	key replicaKey
	*fetchPart
}

// listOf is parts as a slice, for fetcher.list.
func listOf(parts map[replicaKey]*fetchPart) []keyedPart {
	list := make([]keyedPart, 0, len(parts))
	for k, p := range parts {
		list = append(list, keyedPart{k, p})
	}
	return list
}

type fetchPart struct {
	followed
	st partState
	// round is the number of the last round whose Fetch carried this
	// partition (fetcher.rounds). REQUIRES: owned by the fetcher goroutine.
	round uint64
	// pos is the replica's fetch position as last read
	// (Replica.FetchPositionSince). REQUIRES: owned by the fetcher goroutine.
	pos partition.FetchPos
	// hot: the next partial round visits it (fetcher.hot). REQUIRES: owned
	// by the fetcher goroutine.
	hot bool
}

// fetchers owns the follower fetchers; Update is called after each
// reconcile.
//
// Lock order: mu, then a fetcher's mu (Update, Manager.Fetchers); mu is
// never taken with a fetcher's mu held. stop, which waits for a fetcher's
// goroutine, runs with mu held: that goroutine never takes fetchers.mu.
type fetchers struct {
	self   int32
	store  Metadata
	logger *slog.Logger
	cfg    FetchConfig
	dialer *interbroker.Dialer        // every connection to a leader
	tier   atomic.Pointer[remoteTier] // nil until tiering starts

	mu       sync.Mutex
	byLeader map[fetcherKey]*fetcher
	closed   bool
}

// fetcherKey names one fetcher: its leader node and its index among that
// node's num.replica.fetchers.
type fetcherKey struct {
	leader int32
	index  int
}

// FetchConfig is the follower fetchers' settings.
type FetchConfig struct {
	Fetchers          int           // num.replica.fetchers (at least 1)
	MaxWait           time.Duration // replica.fetch.wait.max.ms
	MinBytes          int32         // replica.fetch.min.bytes
	MaxBytes          int32         // replica.fetch.response.max.bytes
	PartitionMaxBytes int32         // replica.fetch.max.bytes
	// RetryBackoff is how long a partition pauses after a failed
	// divergence check or append, a partition error in a Fetch answer, or
	// a DivergingEpoch that cut nothing (as replica.fetch.backoff.ms).
	// Default 200ms.
	RetryBackoff time.Duration
}

// FetchConfigFrom takes the replica.fetch.* settings of a validated
// broker config.
func FetchConfigFrom(b config.Broker) FetchConfig {
	return FetchConfig{Fetchers: max(b.NumReplicaFetchers, 1), MaxWait: b.ReplicaFetchWaitMax,
		MinBytes: b.ReplicaFetchMinBytes, MaxBytes: b.ReplicaFetchResponseMaxBytes, PartitionMaxBytes: b.ReplicaFetchMaxBytes}
}

func newFetchers(self int32, store Metadata, cfg FetchConfig, dialer *interbroker.Dialer, logger *slog.Logger) *fetchers {
	if dialer == nil {
		dialer = interbroker.Plaintext()
	}
	cfg.Fetchers = max(cfg.Fetchers, 1)
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = defaultRetryBackoff
	}
	return &fetchers{self: self, store: store, logger: logger.With("component", "replica-fetcher"),
		cfg: cfg, dialer: dialer, byLeader: map[fetcherKey]*fetcher{}}
}

// fetcherIndex is the fetcher, of n per leader, that replicates k: Kafka's
// abs(31 * topic.hashCode() + partition) % num.replica.fetchers, with Java's
// String.hashCode over UTF-16, so the spread is stable across restarts.
func fetcherIndex(k replicaKey, n int) int {
	var h int32
	for _, r := range utf16.Encode([]rune(k.topic)) {
		h = 31*h + int32(r)
	}
	v := 31*h + k.partition
	if v < 0 {
		v = -v // as Kafka's Utils.abs: MinInt32 maps to 0 below
	}
	if v < 0 {
		v = 0
	}
	return int(v) % n
}

// Update installs the set of followed partitions, starting and stopping
// fetchers per leader node.
func (f *fetchers) Update(parts map[replicaKey]followed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	byLeader := map[fetcherKey]map[replicaKey]followed{}
	for k, p := range parts {
		fk := fetcherKey{leader: p.leader, index: fetcherIndex(k, f.cfg.Fetchers)}
		if byLeader[fk] == nil {
			byLeader[fk] = map[replicaKey]followed{}
		}
		byLeader[fk][k] = p
	}
	addrs := f.leaderAddrs()
	for id, ft := range f.byLeader {
		_, ok := byLeader[id]
		addr, known := addrs[id.leader]
		if ok && (!known || addr == ft.addr) {
			continue
		}
		// Not followed any more, or the leader registered again at
		// another address (a restart): the fetcher's connections and
		// client dial the old one for ever. A new fetcher starts below,
		// and its partitions start over with the divergence check.
		if ok {
			ft.log.Info("leader registered at a new address; restarting the fetcher", "old", ft.addr, "new", addr)
		}
		ft.stop()
		delete(f.byLeader, id)
	}
	for id, ps := range byLeader {
		ft, ok := f.byLeader[id]
		if !ok {
			ft = f.startFetcher(id)
			if ft == nil {
				continue
			}
			f.byLeader[id] = ft
		}
		ft.set(ps)
	}
}

// Patch changes the followed partitions it names and no other: each in
// follow is followed from its leader (moving to another fetcher when its
// leader or epoch changed), each in unfollow is followed no more. A
// fetcher left with no partition stops. Update's check of a leader's
// address is not made here: a broker's registration is a BrokerUp event,
// which makes the manager Update.
func (f *fetchers) Patch(follow map[replicaKey]followed, unfollow []replicaKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	add := map[fetcherKey]map[replicaKey]followed{}
	target := make(map[replicaKey]fetcherKey, len(follow))
	for k, p := range follow {
		fk := fetcherKey{leader: p.leader, index: fetcherIndex(k, f.cfg.Fetchers)}
		if add[fk] == nil {
			add[fk] = map[replicaKey]followed{}
		}
		add[fk][k] = p
		target[k] = fk
	}
	remove := map[fetcherKey][]replicaKey{}
	for fk, ft := range f.byLeader {
		for k := range follow {
			if target[k] != fk && ft.has(k) {
				remove[fk] = append(remove[fk], k)
			}
		}
		for _, k := range unfollow {
			if ft.has(k) {
				remove[fk] = append(remove[fk], k)
			}
		}
	}
	for fk, ks := range remove {
		ft := f.byLeader[fk]
		if ft.patch(add[fk], ks) == 0 {
			ft.stop()
			delete(f.byLeader, fk)
		}
		delete(add, fk)
	}
	for fk, ps := range add {
		ft, ok := f.byLeader[fk]
		if !ok {
			if ft = f.startFetcher(fk); ft == nil {
				continue
			}
			f.byLeader[fk] = ft
		}
		ft.patch(ps, nil)
	}
}

// Close stops every fetcher.
func (f *fetchers) Close() {
	f.mu.Lock()
	f.closed = true
	fts := f.byLeader
	f.byLeader = map[fetcherKey]*fetcher{}
	f.mu.Unlock()
	for _, ft := range fts {
		ft.stop()
	}
}

// leaderAddrs returns the Kafka address of every registered broker.
func (f *fetchers) leaderAddrs() map[int32]string {
	out := map[int32]string{}
	for _, b := range f.store.Brokers() {
		out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	return out
}

func (f *fetchers) startFetcher(key fetcherKey) *fetcher {
	leader := key.leader
	addr := f.leaderAddrs()[leader]
	if addr == "" {
		// The leader is not registered (yet, in this node's cache): its
		// BrokerUp reconciles and calls Update again (Manager.Run), or the
		// controller moves the leadership.
		return nil
	}
	clientID := fmt.Sprintf("shale-replica-%d-%d", f.self, key.index)
	cl, err := kgo.NewClient(append(f.dialer.KgoOpts(), kgo.SeedBrokers(addr), kgo.ClientID(clientID),
		kgo.RequestTimeoutOverhead(5*time.Second))...)
	if err != nil {
		f.logger.Error("replica fetcher client", "leader", leader, "err", err)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fetcher{f: f, leader: leader, index: key.index, addr: addr, cl: cl, conn: newFetchConn(f.dialer, addr, clientID), cancel: cancel, done: make(chan struct{}), parts: map[replicaKey]*fetchPart{},
		log: f.logger.With("leader", leader, "fetcher", key.index)}
	go ft.run(ctx)
	return ft
}

// fetcher replicates the partitions led by one node that hash to its index.
type fetcher struct {
	f      *fetchers
	leader int32
	index  int
	addr   string // the leader's address it dials
	cl     *kgo.Client
	conn   *fetchConn // Fetch requests; owned by run
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	session followerSession // incremental fetch session (fetch_session.go); owned by run
	// rounds counts the rounds run; next is the last round's partitions,
	// kept for its backing array. Owned by run: a round over thousands of
	// idle partitions allocates nothing in proportion to them.
	rounds uint64
	next   []wanted
	// A round visits every partition (a sweep) only when some fetch
	// position of the process may have moved since the last sweep
	// (partition.PositionChanges: swept), the partitions changed
	// (sweptList), the session is not established, or sweepEvery has
	// passed; otherwise it visits only hot: the partitions that could not
	// fetch (a pause, a divergence check, a bootstrap), that got an answer,
	// or whose request the session does not hold yet. The leader's session
	// holds every other partition's request as it was, so the Fetch names
	// none of them: an idle follower's round costs nothing per partition.
	// Owned by run.
	swept     uint64
	sweptList uint64
	sweptAt   time.Time
	hot       []keyedPart
	hotNext   []keyedPart // storage for the next round's hot
	skipped   []replicaKey
	visited   atomic.Uint64 // partitions visited by rounds, for tests

	mu sync.Mutex
	// parts is the followed partitions. A round reads the map snapshot
	// handed it without the lock, so a map once handed out (shared) is
	// never changed in place: the next change copies it, and the changes
	// after that, until the next snapshot, change the copy. (A copy per
	// change, before: a node taking over 3,333 partitions' roles in
	// batches copied its fetchers' maps of thousands of partitions for
	// each batch, 80 MB in a failover at 10,000 partitions.)
	parts  map[replicaKey]*fetchPart
	shared bool
	// list is parts in a slice, made by snapshot when the map changed
	// (listStale): a round walks it (a map walk of thousands of
	// partitions twice a second was a visible part of an idle node's CPU).
	list      []keyedPart
	listStale bool
	// fullNext: a partition's role or replica changed (set): the next
	// Fetch is full, so that the leader answers every partition once.
	fullNext bool // REQUIRES: mu held
	// listGen counts the replacements of list. REQUIRES: mu held.
	listGen uint64
	sent    sentFetch    // REQUIRES: mu held
	fail    fetchFailure // REQUIRES: mu held
}

// fetchFailure is a fetcher's run of failed rounds, shown in FetcherStatus
// so that a fetcher the leader refuses (a wrong password, an untrusted
// certificate) is visible and not a silent stall.
type fetchFailure struct {
	count    int       // consecutive failed Fetch requests (or refused logins)
	err      string    // the last one's error
	logged   string    // the last error logged at Warn
	loggedAt time.Time // when
}

// refusedLogEvery is how often a fetcher repeats a refusal at Warn.
const refusedLogEvery = 30 * time.Second

// note records the outcome of a Fetch (nil: answered) or of a request that
// the leader refused at the connection (a TLS or SASL failure), and logs a
// refusal at Warn: the first of a run of failures, then at most once per
// refusedLogEvery (the status shows the latest). Other failures (a leader
// restarting) stay at Debug.
func (ft *fetcher) note(err error) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	f := &ft.fail
	if err == nil {
		if f.logged != "" {
			ft.log.Info("replica fetcher connected to the leader again", "addr", ft.addr, "after_failures", f.count)
		}
		*f = fetchFailure{}
		return
	}
	f.count++
	f.err = err.Error()
	if !interbroker.Refused(err) {
		ft.log.Debug("replica fetch failed", "err", err)
		return
	}
	if now := time.Now(); f.logged == "" || now.Sub(f.loggedAt) >= refusedLogEvery {
		f.logged, f.loggedAt = f.err, now
		ft.log.Warn("replica fetcher: the leader refused this node's connection; retrying with backoff", "addr", ft.addr,
			"failures", f.count, "err", err)
	}
}

// sentFetch is what a fetcher last put on the wire (Manager.Fetchers).
type sentFetch struct {
	count                                                uint64
	full                                                 uint64 // of count, full fetches (no session yet, or after a session error)
	maxWaitMillis, minBytes, maxBytes, partitionMaxBytes int32
	partitions                                           int // named in the last one
}

// countParts is how many partitions req names.
func countParts(req *kmsg.FetchRequest) int {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	return n
}

func (ft *fetcher) set(ps map[replicaKey]followed) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	changed := len(ps) != len(ft.parts)
	for k, p := range ps {
		if cur, ok := ft.parts[k]; !ok || cur.epoch != p.epoch || cur.rep != p.rep {
			changed = true
			break
		}
	}
	if !changed {
		return
	}
	parts := make(map[replicaKey]*fetchPart, len(ps))
	for k, p := range ps {
		cur, ok := ft.parts[k]
		if ok && cur.epoch == p.epoch && cur.rep == p.rep {
			parts[k] = cur
			continue
		}
		parts[k] = &fetchPart{followed: p, st: newPartState(ft.f.cfg.RetryBackoff)}
		ft.fullNext = ft.fullNext || ok
	}
	ft.parts, ft.shared, ft.listStale = parts, false, true
}

// writable returns parts for a change: a copy when a round may hold it.
// REQUIRES: mu held.
func (ft *fetcher) writable() map[replicaKey]*fetchPart {
	if ft.shared || ft.parts == nil {
		ft.parts = maps.Clone(ft.parts)
		if ft.parts == nil {
			ft.parts = map[replicaKey]*fetchPart{}
		}
		ft.shared = false
	}
	ft.listStale = true
	return ft.parts
}

// has reports whether the fetcher follows k.
func (ft *fetcher) has(k replicaKey) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	_, ok := ft.parts[k]
	return ok
}

// patch is set for the partitions in add and remove alone: those in add
// are followed as given (a changed one starts over, as set does), those in
// remove no more. It returns how many partitions the fetcher follows after.
func (ft *fetcher) patch(add map[replicaKey]followed, remove []replicaKey) int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	changed := false
	for _, k := range remove {
		if _, ok := ft.parts[k]; ok {
			changed = true
		}
	}
	for k, p := range add {
		if cur, ok := ft.parts[k]; !ok || cur.epoch != p.epoch || cur.rep != p.rep {
			changed = true
		}
	}
	if !changed {
		return len(ft.parts)
	}
	parts := ft.writable()
	for _, k := range remove {
		delete(parts, k)
	}
	for k, p := range add {
		cur, ok := parts[k]
		if ok && cur.epoch == p.epoch && cur.rep == p.rep {
			continue
		}
		parts[k] = &fetchPart{followed: p, st: newPartState(ft.f.cfg.RetryBackoff)}
		ft.fullNext = ft.fullNext || ok
	}
	return len(parts)
}

func (ft *fetcher) stop() {
	ft.cancel()
	<-ft.done
	ft.cl.Close()
}

// snapshot returns the partitions to fetch, as a map and a list, which
// the caller must not change, the list's generation, and whether the next
// Fetch must be full (fullNext, which it clears).
func (ft *fetcher) snapshot() (map[replicaKey]*fetchPart, []keyedPart, uint64, bool) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	full := ft.fullNext
	ft.fullNext = false
	if ft.listStale {
		ft.list = listOf(ft.parts)
		ft.listGen++
		ft.listStale = false
	}
	ft.shared = true
	return ft.parts, ft.list, ft.listGen, full
}

func (ft *fetcher) run(ctx context.Context) {
	defer close(ft.done)
	defer ft.conn.Close()
	var pacer roundPacer
	for ctx.Err() == nil {
		parts, list, listGen, full := ft.snapshot()
		if full {
			ft.session.reset()
		}
		active, err := ft.round(ctx, parts, list, listGen)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
		}
		if pause := pacer.after(err != nil, len(parts), active); pause > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
		}
	}
}

func (ft *fetcher) broker() *kgo.Broker {
	if bs := ft.cl.SeedBrokers(); len(bs) > 0 {
		return bs[0]
	}
	return nil
}

// sweepEvery bounds how long partial rounds go on without a sweep, in
// nanoseconds: a guard, since every change of a fetch position is counted
// (partition.PositionChanges). A variable for tests (SetSweepEvery).
var sweepEvery atomic.Int64

func init() { sweepEvery.Store(int64(30 * time.Second)) }

// round runs one round: each partition's state machine (follow.go) says
// whether it bootstraps, checks divergence, or goes into the one Fetch of
// the round; the answer is applied partition by partition. A round visits
// every partition, or only the hot ones (see fetcher.swept). It returns
// how many partitions the Fetch carried, those the session holds without
// naming them included.
func (ft *fetcher) round(ctx context.Context, parts map[replicaKey]*fetchPart, list []keyedPart, listGen uint64) (int, error) {
	b := ft.broker()
	if b == nil {
		return 0, errors.New("no connection to the leader")
	}
	now := time.Now()
	changes := partition.PositionChanges() // before any position is read
	sweep := ft.session.epoch <= 0 || changes != ft.swept || listGen != ft.sweptList || now.Sub(ft.sweptAt) >= time.Duration(sweepEvery.Load())
	visit := ft.hot
	if sweep {
		visit = list
		ft.swept, ft.sweptList, ft.sweptAt = changes, listGen, now
	}
	ft.visited.Add(uint64(len(visit)))
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = ft.f.self
	req.MaxWaitMillis = int32(ft.f.cfg.MaxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = ft.f.cfg.MinBytes, ft.f.cfg.MaxBytes
	ft.rounds++
	round := ft.rounds
	next := ft.next[:0]
	defer func() { ft.next = next[:0] }()
	hot := ft.hotNext[:0]
	ft.skipped = ft.skipped[:0]
	anyFailed := segment.AnyFailed() // else no log needs asking
	for _, kp := range visit {
		k, p := kp.key, kp.fetchPart
		p.hot = false
		if anyFailed && p.rep.LogErr() != nil {
			// The log went offline (an fsync failed): it takes no more
			// batches, and the next Reconcile drops it from this fetcher.
			ft.skipped = append(ft.skipped, k)
			continue
		}
		a := p.st.Step(now, event{kind: evRound})
		for a.kind == actBootstrap || a.kind == actTruncate {
			var err error
			if a.kind == actBootstrap {
				err = ft.bootstrap(ctx, b, k, p)
				if err != nil && ctx.Err() != nil {
					return 0, ctx.Err() // stopping: not a failure to pace or log
				}
				if interbroker.Refused(err) {
					ft.note(err)
				}
				a = p.st.Step(now, event{kind: evBootstrapped, err: err})
				if a.kind == actBackoff {
					ft.log.Log(ctx, a.level, "rebuilding from the remote tail failed; retrying", "topic", k.topic, "partition", k.partition,
						"failures", p.st.retry.failures, "retry_in", a.pause, "err", err)
				}
			} else {
				err = ft.truncate(ctx, b, k, p)
				if interbroker.Refused(err) && ctx.Err() == nil {
					ft.note(err)
				}
				a = p.st.Step(now, event{kind: evTruncated, err: err})
				if a.kind == actBackoff {
					ft.log.Log(ctx, a.level, "truncation check failed", "topic", k.topic, "partition", k.partition, "err", err)
				}
			}
		}
		if a.kind != actFetch {
			// Paused: out of the session until it fetches again.
			p.hot = true
			hot = append(hot, kp)
			ft.skipped = append(ft.skipped, k)
			continue
		}
		p.pos = p.rep.FetchPositionSince(p.pos)
		w := wanted{key: k, partFetch: partFetch{fetchOffset: p.pos.FetchOffset, logStartOffset: p.pos.LogStart,
			leaderEpoch: p.epoch, lastFetchedEpoch: p.pos.LastFetchedEpoch, max: ft.f.cfg.PartitionMaxBytes}}
		p.st.Step(now, event{kind: evSent, epoch: w.lastFetchedEpoch})
		next = append(next, w)
		p.round = round
		if !ft.session.holds(w) {
			// The session learns this request from this round's Fetch:
			// visit it again until it holds it.
			p.hot = true
			hot = append(hot, kp)
		}
	}
	ft.hotNext, ft.hot = ft.hot[:0], hot
	held := 0 // of the session's partitions, those the Fetch leaves as they are
	var full bool
	if sweep {
		full = ft.session.build(req, next)
	} else {
		held = ft.session.buildPartial(req, next, ft.skipped)
	}
	if len(next)+held == 0 {
		return 0, nil
	}
	ft.mu.Lock()
	ft.sent = sentFetch{count: ft.sent.count + 1, full: ft.sent.full, maxWaitMillis: req.MaxWaitMillis, minBytes: req.MinBytes,
		maxBytes: req.MaxBytes, partitionMaxBytes: ft.f.cfg.PartitionMaxBytes, partitions: countParts(req)}
	if full {
		ft.sent.full++
	}
	ft.mu.Unlock()
	resp, err := ft.conn.Fetch(ctx, req)
	if ctx.Err() == nil {
		ft.note(err)
	}
	if err != nil {
		ft.session.reset() // the leader's session may have moved on without this node seeing it
		return len(next) + held, err
	}
	if ok, err := ft.session.answered(resp, next, full); !ok || err != nil {
		// A session error (err nil) carries no partitions: the next round,
		// at once, is a full Fetch.
		return len(next) + held, err
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			k := replicaKey{t.Topic, rp.Partition}
			// A partition named in this Fetch, or one the session holds
			// from an earlier round (a partial round's).
			if p, ok := parts[k]; ok && (p.round == round || ft.session.holdsKey(k)) {
				ft.apply(k, p, &rp)
				if !p.hot {
					p.hot = true
					ft.hot = append(ft.hot, keyedPart{k, p})
				}
			}
		}
	}
	return len(next) + held, nil
}

// apply applies one partition's Fetch answer as its state machine says.
func (ft *fetcher) apply(k replicaKey, p *fetchPart, rp *kmsg.FetchResponseTopicPartition) {
	ev := event{kind: evAnswer, code: rp.ErrorCode}
	if rp.DivergingEpoch.Epoch >= 0 {
		ev.diverging, ev.divEpoch, ev.divEndOffset = true, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset
	}
	a := p.st.Step(time.Now(), ev)
	switch a.kind {
	case actBackoff:
		ft.log.Log(context.Background(), a.level, "replica fetch partition error", "topic", k.topic, "partition", k.partition,
			"err", kerr.ErrorForCode(rp.ErrorCode))
	case actAppend:
		err := p.rep.AppendFollower(rp.RecordBatches, rp.HighWatermark)
		if err == nil {
			ft.followLogStart(k, p, rp.LogStartOffset)
		}
		if a := p.st.Step(time.Now(), event{kind: evAppended, err: err}); a.kind == actBackoff {
			ft.log.Log(context.Background(), a.level, "follower append failed; checking for divergence",
				"topic", k.topic, "partition", k.partition, "err", err)
		}
	case actCutDiverging:
		ft.cutDiverging(k, p, a)
	}
}

// followLogStart moves the follower's log start up to the leader's
// (DeleteRecords, retention), as Kafka's followers do from each fetch
// answer, within the follower's high watermark. Tiered topics are left to
// the tiering loop: the leader reports its local log start, above data that
// is in the bucket, and the log start DeleteRecords set is in the remote
// metadata (tiering.Manager.DeleteRecordsBefore). A topic with
// remote.storage.enable on a node that does not tier at the moment (its
// cold tier not shared) is followed like any other, as its DeleteRecords
// then waits for the followers (admin's DeleteRecords).
func (ft *fetcher) followLogStart(k replicaKey, p *fetchPart, leaderStart int64) {
	if leaderStart <= p.rep.LocalLogStartOffset() || p.rep.Config().Bool(config.RemoteStorageEnable) && ft.f.tiers() {
		return
	}
	if _, err := p.rep.DeleteRecordsBefore(min(leaderStart, p.rep.HighWatermark())); err != nil {
		ft.log.Warn("follower log start not moved to the leader's", "topic", k.topic, "partition", k.partition,
			"leader_log_start", leaderStart, "err", err)
	}
}

// truncate asks the leader for the end of this replica's latest epoch and
// cuts the local log there.
func (ft *fetcher) truncate(ctx context.Context, b *kgo.Broker, k replicaKey, p *fetchPart) error {
	l := p.rep.Log()
	epochs := l.Epochs()
	if len(epochs) == 0 {
		return nil // an empty log cannot diverge
	}
	latest := epochs[len(epochs)-1].Epoch
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = ft.f.self
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = k.topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = k.partition, p.epoch, latest
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	kresp, err := b.Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("malformed OffsetForLeaderEpoch response")
	}
	r := resp.Topics[0].Partitions[0]
	if r.ErrorCode != 0 {
		return kerr.ErrorForCode(r.ErrorCode)
	}
	from := l.LogEndOffset()
	to, err := p.rep.TruncateDivergent(latest, r.LeaderEpoch, r.EndOffset)
	if to < from {
		ft.log.Info("follower truncating divergent tail", "topic", k.topic, "partition", k.partition,
			"from", from, "to", to, "epoch", latest, "leader_epoch_answer", r.LeaderEpoch, "via", "OffsetForLeaderEpoch")
	}
	return err
}

// cutDiverging applies a fetch answer's DivergingEpoch (KIP-320): the
// leader's largest epoch at or below the LastFetchedEpoch this fetcher
// sent (a.fetchedEpoch), and that epoch's end in the leader's log (a.epoch,
// a.endOffset). The tail is cut as the OffsetForLeaderEpoch answer would
// cut it (Replica.TruncateDivergent), and the next round fetches from the
// new log end. The state machine sends an answer that cut nothing to the
// OffsetForLeaderEpoch check, paced like a failed one.
func (ft *fetcher) cutDiverging(k replicaKey, p *fetchPart, a action) {
	from := p.rep.Log().LogEndOffset()
	to, err := p.rep.TruncateDivergent(a.fetchedEpoch, a.epoch, a.endOffset)
	next := p.st.Step(time.Now(), event{kind: evCut, err: err, cut: err == nil && to < from})
	switch {
	case next.kind == actBackoff:
		ft.log.Log(context.Background(), next.level, "diverging epoch from the leader cut nothing; checking with OffsetForLeaderEpoch", "topic", k.topic,
			"partition", k.partition, "log_end", from, "epoch", a.fetchedEpoch, "diverging_epoch", a.epoch, "end_offset", a.endOffset, "err", err)
	case err == nil:
		ft.log.Info("follower truncating divergent tail", "topic", k.topic, "partition", k.partition,
			"from", from, "to", to, "epoch", a.fetchedEpoch, "leader_epoch_answer", a.epoch, "via", "DivergingEpoch")
	}
}

// FetcherStatus describes one follower fetcher of a node.
type FetcherStatus struct {
	Leader     int32    // the node it fetches from
	Index      int      // 0 .. num_replica_fetchers-1
	Partitions []string // "topic-partition", sorted
	Fetches    uint64   // Fetch requests sent
	// FullFetches counts, of Fetches, the full ones: every partition named
	// (no fetch session yet, or after a session error or a role change);
	// the others were incremental (KIP-227).
	FullFetches uint64
	// LastNamed is how many partitions the last Fetch named (an
	// incremental Fetch names only those whose request changed).
	LastNamed int
	// Visited counts the partitions its rounds have visited: an idle
	// fetcher's rounds visit none (fetcher.swept).
	Visited uint64
	// The settings of the last Fetch request sent, as on the wire.
	MaxWaitMillis, MinBytes, MaxBytes, PartitionMaxBytes int32
	// Failures counts the consecutive failed Fetch requests (and logins
	// the leader refused), Error is the last one's error; both are reset
	// by an answered Fetch.
	Failures int
	Error    string
}

// Fetchers lists this node's follower fetchers, by leader and index
// (status, tools and tests).
func (r *Manager) Fetchers() []FetcherStatus {
	r.fetchers.mu.Lock()
	fts := make([]*fetcher, 0, len(r.fetchers.byLeader))
	for _, ft := range r.fetchers.byLeader {
		fts = append(fts, ft)
	}
	r.fetchers.mu.Unlock()
	out := make([]FetcherStatus, 0, len(fts))
	for _, ft := range fts {
		ft.mu.Lock()
		st := FetcherStatus{Leader: ft.leader, Index: ft.index, Fetches: ft.sent.count, FullFetches: ft.sent.full, LastNamed: ft.sent.partitions,
			Visited:       ft.visited.Load(),
			MaxWaitMillis: ft.sent.maxWaitMillis, MinBytes: ft.sent.minBytes, MaxBytes: ft.sent.maxBytes,
			PartitionMaxBytes: ft.sent.partitionMaxBytes, Failures: ft.fail.count, Error: ft.fail.err}
		for k := range ft.parts {
			st.Partitions = append(st.Partitions, fmt.Sprintf("%s-%d", k.topic, k.partition))
		}
		ft.mu.Unlock()
		slices.Sort(st.Partitions)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b FetcherStatus) int {
		if a.Leader != b.Leader {
			return int(a.Leader - b.Leader)
		}
		return a.Index - b.Index
	})
	return out
}
