package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
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

type fetchPart struct {
	followed
	needTruncate bool
	// needBootstrap: the leader no longer holds this replica's log end
	// locally; rebuild from the remote tail (bootstrap.go).
	needBootstrap  bool
	bootstrapRetry bootstrapRetry // pacing of failed bootstraps
	pausedUntil    time.Time
	// fetchedEpoch is the LastFetchedEpoch of the Fetch in flight: the
	// epoch a DivergingEpoch in its answer is about.
	fetchedEpoch int32
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
}

// FetchConfigFrom takes the replica.fetch.* settings of a validated
// broker config.
func FetchConfigFrom(b config.Broker) FetchConfig {
	return FetchConfig{Fetchers: max(b.NumReplicaFetchers, 1), MaxWait: b.ReplicaFetchWaitMax,
		MinBytes: b.ReplicaFetchMinBytes, MaxBytes: b.ReplicaFetchResponseMaxBytes, PartitionMaxBytes: b.ReplicaFetchMaxBytes}
}

func newFetchers(self int32, store Metadata, cfg FetchConfig, logger *slog.Logger) *fetchers {
	cfg.Fetchers = max(cfg.Fetchers, 1)
	return &fetchers{self: self, store: store, logger: logger.With("component", "replica-fetcher"),
		cfg: cfg, byLeader: map[fetcherKey]*fetcher{}}
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
	for id, ft := range f.byLeader {
		if _, ok := byLeader[id]; !ok {
			ft.stop()
			delete(f.byLeader, id)
		}
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

func (f *fetchers) startFetcher(key fetcherKey) *fetcher {
	leader := key.leader
	var addr string
	for _, b := range f.store.Brokers() {
		if b.NodeID == leader {
			addr = fmt.Sprintf("%s:%d", b.Host, b.Port)
		}
	}
	if addr == "" {
		// The leader is not registered (yet, in this node's cache): its
		// BrokerUp reconciles and calls Update again (Manager.Run), or the
		// controller moves the leadership.
		return nil
	}
	clientID := fmt.Sprintf("shale-replica-%d-%d", f.self, key.index)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID),
		kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		f.logger.Error("replica fetcher client", "leader", leader, "err", err)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fetcher{f: f, leader: leader, index: key.index, cl: cl, conn: newFetchConn(addr, clientID), cancel: cancel, done: make(chan struct{}), parts: map[replicaKey]*fetchPart{},
		log: f.logger.With("leader", leader, "fetcher", key.index)}
	go ft.run(ctx)
	return ft
}

// fetcher replicates the partitions led by one node that hash to its index.
type fetcher struct {
	f      *fetchers
	leader int32
	index  int
	cl     *kgo.Client
	conn   *fetchConn // Fetch requests; owned by run
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	parts map[replicaKey]*fetchPart
	sent  sentFetch // REQUIRES: mu held
}

// sentFetch is what a fetcher last put on the wire (Manager.Fetchers).
type sentFetch struct {
	count                                                uint64
	maxWaitMillis, minBytes, maxBytes, partitionMaxBytes int32
}

func (ft *fetcher) set(ps map[replicaKey]followed) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for k := range ft.parts {
		if _, ok := ps[k]; !ok {
			delete(ft.parts, k)
		}
	}
	for k, p := range ps {
		cur, ok := ft.parts[k]
		if !ok || cur.epoch != p.epoch || cur.rep != p.rep {
			ft.parts[k] = &fetchPart{followed: p, needTruncate: true}
		}
	}
}

func (ft *fetcher) stop() {
	ft.cancel()
	<-ft.done
	ft.cl.Close()
}

func (ft *fetcher) snapshot() map[replicaKey]*fetchPart {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	out := make(map[replicaKey]*fetchPart, len(ft.parts))
	for k, p := range ft.parts {
		out[k] = p
	}
	return out
}

func (ft *fetcher) run(ctx context.Context) {
	defer close(ft.done)
	defer ft.conn.Close()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		parts := ft.snapshot()
		if err := ft.round(ctx, parts); err != nil {
			if ctx.Err() != nil {
				return
			}
			ft.log.Debug("replica fetch failed", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		if len(parts) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
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

// round truncates new followers, then sends one Fetch for every active
// partition and applies the answer.
func (ft *fetcher) round(ctx context.Context, parts map[replicaKey]*fetchPart) error {
	b := ft.broker()
	if b == nil {
		return errors.New("no connection to the leader")
	}
	now := time.Now()
	for k, p := range parts {
		if p.needBootstrap && now.After(p.pausedUntil) {
			switch err := ft.bootstrap(ctx, b, k, p); {
			case err == nil:
				p.needBootstrap, p.bootstrapRetry = false, bootstrapRetry{}
			case errors.Is(err, errNotBehind):
				// Out of range for another reason: check divergence.
				p.needBootstrap, p.needTruncate, p.bootstrapRetry = false, true, bootstrapRetry{}
			default:
				if ctx.Err() != nil {
					return ctx.Err() // stopping: not a failure to pace or log
				}
				pause, level := p.bootstrapRetry.failed(now)
				p.pausedUntil = now.Add(pause)
				ft.log.Log(ctx, level, "rebuilding from the remote tail failed; retrying", "topic", k.topic, "partition", k.partition,
					"failures", p.bootstrapRetry.failures, "retry_in", pause, "err", err)
				continue
			}
		}
		if p.needTruncate && now.After(p.pausedUntil) {
			if err := ft.truncate(ctx, b, k, p); err != nil {
				p.pausedUntil = now.Add(200 * time.Millisecond)
				ft.log.Debug("truncation check failed", "topic", k.topic, "partition", k.partition, "err", err)
				continue
			}
			p.needTruncate = false
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = ft.f.self
	req.MaxWaitMillis = int32(ft.f.cfg.MaxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = ft.f.cfg.MinBytes, ft.f.cfg.MaxBytes
	topics := map[string]int{}
	active := map[replicaKey]*fetchPart{}
	for k, p := range parts {
		if p.needTruncate || p.needBootstrap || now.Before(p.pausedUntil) {
			continue
		}
		i, ok := topics[k.topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = k.topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[k.topic] = i
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.CurrentLeaderEpoch = k.partition, p.epoch
		fp.FetchOffset, fp.LogStartOffset = p.rep.Log().LogEndOffset(), p.rep.LogStartOffset()
		fp.LastFetchedEpoch = p.rep.Log().LatestEpoch()
		p.fetchedEpoch = fp.LastFetchedEpoch
		fp.PartitionMaxBytes = ft.f.cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, fp)
		active[k] = p
	}
	if len(active) == 0 {
		if len(parts) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		return nil
	}
	ft.mu.Lock()
	ft.sent = sentFetch{count: ft.sent.count + 1, maxWaitMillis: req.MaxWaitMillis, minBytes: req.MinBytes,
		maxBytes: req.MaxBytes, partitionMaxBytes: req.Topics[0].Partitions[0].PartitionMaxBytes}
	ft.mu.Unlock()
	resp, err := ft.conn.Fetch(ctx, req)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			k := replicaKey{t.Topic, rp.Partition}
			p, ok := active[k]
			if !ok {
				continue
			}
			switch rp.ErrorCode {
			case 0:
				if rp.DivergingEpoch.Epoch >= 0 {
					ft.truncateDiverging(k, p, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
					continue
				}
				if err := p.rep.AppendFollower(rp.RecordBatches, rp.HighWatermark); err != nil {
					if errors.Is(err, partition.ErrNotLeader) {
						continue
					}
					if errors.Is(err, partition.ErrDiskFull) {
						// Past disk_high_watermark (logged by tiering): fetch
						// again later; the leader drops this replica from
						// the ISR meanwhile.
						p.pausedUntil = time.Now().Add(time.Second)
						continue
					}
					ft.log.Warn("follower append failed; checking for divergence", "topic", k.topic, "partition", k.partition, "err", err)
					p.needTruncate = true
					p.pausedUntil = time.Now().Add(200 * time.Millisecond) // no tight loop if it fails again
				}
			case kerr.OffsetMovedToTieredStorage.Code, kerr.OffsetOutOfRange.Code:
				// Below the leader's local log start (KIP-405), or out of
				// its range: bootstrap checks which, and hands a log that is
				// not behind to the divergence check.
				p.needBootstrap = true
			default:
				// Fenced, not leader, unknown epoch...: wait for the control
				// plane to tell this node the new roles.
				p.pausedUntil = time.Now().Add(200 * time.Millisecond)
				p.needTruncate = true // recheck divergence before fetching again
				ft.log.Debug("replica fetch partition error", "topic", k.topic, "partition", k.partition,
					"err", kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	return nil
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

// truncateDiverging applies a fetch response's DivergingEpoch (KIP-320):
// the leader's largest epoch at or below the LastFetchedEpoch this fetcher
// sent, and that epoch's end in the leader's log. The tail is cut as the
// OffsetForLeaderEpoch answer would cut it (Replica.TruncateDivergent), and
// the next round fetches from the new log end. An answer that cuts nothing
// cannot make progress by fetching again: the partition goes to the
// OffsetForLeaderEpoch check, paced like a failed one.
func (ft *fetcher) truncateDiverging(k replicaKey, p *fetchPart, epoch int32, endOffset int64) {
	from := p.rep.Log().LogEndOffset()
	to, err := p.rep.TruncateDivergent(p.fetchedEpoch, epoch, endOffset)
	switch {
	case errors.Is(err, partition.ErrNotLeader):
		// The role moved on: the control plane's next update decides.
	case err != nil || to >= from:
		ft.log.Warn("diverging epoch from the leader cut nothing; checking with OffsetForLeaderEpoch", "topic", k.topic,
			"partition", k.partition, "log_end", from, "epoch", p.fetchedEpoch, "diverging_epoch", epoch, "end_offset", endOffset, "err", err)
		p.needTruncate = true
		p.pausedUntil = time.Now().Add(200 * time.Millisecond)
	default:
		ft.log.Info("follower truncating divergent tail", "topic", k.topic, "partition", k.partition,
			"from", from, "to", to, "epoch", p.fetchedEpoch, "leader_epoch_answer", epoch, "via", "DivergingEpoch")
	}
}

// FetcherStatus describes one follower fetcher of a node.
type FetcherStatus struct {
	Leader     int32    // the node it fetches from
	Index      int      // 0 .. num_replica_fetchers-1
	Partitions []string // "topic-partition", sorted
	Fetches    uint64   // Fetch requests sent
	// The settings of the last Fetch request sent, as on the wire.
	MaxWaitMillis, MinBytes, MaxBytes, PartitionMaxBytes int32
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
		st := FetcherStatus{Leader: ft.leader, Index: ft.index, Fetches: ft.sent.count,
			MaxWaitMillis: ft.sent.maxWaitMillis, MinBytes: ft.sent.minBytes, MaxBytes: ft.sent.maxBytes,
			PartitionMaxBytes: ft.sent.partitionMaxBytes}
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
