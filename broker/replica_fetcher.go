package broker

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

	"github.com/shale-io/shale/controlplane"
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
// from the remote tail instead of copying history (replica_bootstrap.go,
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
	// locally; rebuild from the remote tail (replica_bootstrap.go).
	needBootstrap  bool
	bootstrapRetry bootstrapRetry // pacing of failed bootstraps
	pausedUntil    time.Time
	// fetchedEpoch is the LastFetchedEpoch of the Fetch in flight: the
	// epoch a DivergingEpoch in its answer is about.
	fetchedEpoch int32
}

// replicaFetchers owns the fetchers; Update is called after each reconcile.
type replicaFetchers struct {
	self   int32
	store  *controlplane.Store
	logger *slog.Logger
	cfg    fetcherConfig
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

type fetcherConfig struct {
	fetchers int           // num.replica.fetchers
	maxWait  time.Duration // replica.fetch.wait.max.ms
	minBytes int32         // replica.fetch.min.bytes
	maxBytes int32         // replica.fetch.response.max.bytes
	partMax  int32         // replica.fetch.max.bytes
}

// fetcherConfigFrom takes the replica.fetch.* settings of a validated
// broker config.
func fetcherConfigFrom(b config.Broker) fetcherConfig {
	return fetcherConfig{fetchers: max(b.NumReplicaFetchers, 1), maxWait: b.ReplicaFetchWaitMax,
		minBytes: b.ReplicaFetchMinBytes, maxBytes: b.ReplicaFetchResponseMaxBytes, partMax: b.ReplicaFetchMaxBytes}
}

func newReplicaFetchers(self int32, store *controlplane.Store, cfg fetcherConfig, logger *slog.Logger) *replicaFetchers {
	cfg.fetchers = max(cfg.fetchers, 1)
	return &replicaFetchers{self: self, store: store, logger: logger.With("component", "replica-fetcher"),
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
func (f *replicaFetchers) Update(parts map[replicaKey]followed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	byLeader := map[fetcherKey]map[replicaKey]followed{}
	for k, p := range parts {
		fk := fetcherKey{leader: p.leader, index: fetcherIndex(k, f.cfg.fetchers)}
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
func (f *replicaFetchers) Close() {
	f.mu.Lock()
	f.closed = true
	fts := f.byLeader
	f.byLeader = map[fetcherKey]*fetcher{}
	f.mu.Unlock()
	for _, ft := range fts {
		ft.stop()
	}
}

func (f *replicaFetchers) startFetcher(key fetcherKey) *fetcher {
	leader := key.leader
	var addr string
	for _, b := range f.store.Brokers() {
		if b.NodeID == leader {
			addr = fmt.Sprintf("%s:%d", b.Host, b.Port)
		}
	}
	if addr == "" {
		return nil // the leader is not registered: the controller will move it
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
	f      *replicaFetchers
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

// sentFetch is what a fetcher last put on the wire (ReplicaFetchers).
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
	req.MaxWaitMillis = int32(ft.f.cfg.maxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = ft.f.cfg.minBytes, ft.f.cfg.maxBytes
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
		fp.PartitionMaxBytes = ft.f.cfg.partMax
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

// ReplicaFetcherStatus describes one follower fetcher of a node.
type ReplicaFetcherStatus struct {
	Leader     int32    // the node it fetches from
	Index      int      // 0 .. num_replica_fetchers-1
	Partitions []string // "topic-partition", sorted
	Fetches    uint64   // Fetch requests sent
	// The settings of the last Fetch request sent, as on the wire.
	MaxWaitMillis, MinBytes, MaxBytes, PartitionMaxBytes int32
}

// ReplicaFetchers lists this node's follower fetchers, by leader and index
// (tools and tests).
func (n *Node) ReplicaFetchers() []ReplicaFetcherStatus {
	if n.fetchers == nil {
		return nil
	}
	n.fetchers.mu.Lock()
	fts := make([]*fetcher, 0, len(n.fetchers.byLeader))
	for _, ft := range n.fetchers.byLeader {
		fts = append(fts, ft)
	}
	n.fetchers.mu.Unlock()
	out := make([]ReplicaFetcherStatus, 0, len(fts))
	for _, ft := range fts {
		ft.mu.Lock()
		st := ReplicaFetcherStatus{Leader: ft.leader, Index: ft.index, Fetches: ft.sent.count,
			MaxWaitMillis: ft.sent.maxWaitMillis, MinBytes: ft.sent.minBytes, MaxBytes: ft.sent.maxBytes,
			PartitionMaxBytes: ft.sent.partitionMaxBytes}
		for k := range ft.parts {
			st.Partitions = append(st.Partitions, fmt.Sprintf("%s-%d", k.topic, k.partition))
		}
		ft.mu.Unlock()
		slices.Sort(st.Partitions)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b ReplicaFetcherStatus) int {
		if a.Leader != b.Leader {
			return int(a.Leader - b.Leader)
		}
		return a.Index - b.Index
	})
	return out
}

// isrLoop is the leader's side of ISR management: every interval it asks
// each local leader replica which followers should leave (lagging past
// replica.lag.time.max.ms) or join (caught up) the ISR, and commits the
// change to the control plane by compare-and-set before it counts.
func (n *Node) isrLoop(ctx context.Context) {
	lag := n.cfg.ReplicaLagTimeMax
	t := time.NewTicker(max(lag/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, rep := range n.replicas.All() {
			if !rep.IsLeader() {
				continue
			}
			ch := rep.ProposeISRChange(now, lag)
			if len(ch.Shrink) == 0 && len(ch.Expand) == 0 {
				continue
			}
			st, ok := n.store.Partition(rep.Topic(), rep.Partition())
			if !ok || st.Leader != n.cfg.NodeID || st.LeaderEpoch != rep.LeaderEpoch() {
				continue // fenced: the control plane has moved on
			}
			isr := slices.DeleteFunc(slices.Clone(st.ISR), func(b int32) bool { return slices.Contains(ch.Shrink, b) })
			for _, b := range ch.Expand {
				if !slices.Contains(isr, b) {
					isr = append(isr, b)
				}
			}
			if len(isr) == 0 || slices.Equal(isr, st.ISR) {
				continue
			}
			st.ISR = isr
			uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := n.store.UpdatePartition(uctx, st)
			cancel()
			if err != nil {
				n.logger.Debug("ISR change not committed", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
				continue
			}
			n.logger.Info("ISR changed", "topic", rep.Topic(), "partition", rep.Partition(), "isr", isr,
				"shrink", ch.Shrink, "expand", ch.Expand)
			n.metrics.ISRChanged(len(ch.Shrink) > 0, len(ch.Expand) > 0)
			n.reconcileSoon()
		}
	}
}
