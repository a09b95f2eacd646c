package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// Config configures a Coordinator. Zero fields take the defaults.
type Config struct {
	// Partitions is transaction.state.log.num.partitions (default 50).
	// Every node of a cluster must agree on it.
	Partitions int32
	// ReplicationFactor is transaction.state.log.replication.factor
	// (default 3), capped at the live brokers when this node creates the
	// topic.
	ReplicationFactor int16
	// MinISR is transaction.state.log.min.isr (default 2), the topic's
	// min.insync.replicas, at most its replication factor.
	MinISR int16
	// TransactionVersion is the finalized level of the transaction.version
	// feature this node advertises (KIP-584, KIP-890): 2 has clients that
	// support it use transactions v2. Unlike the other fields, zero is a
	// level (0), not the default; package config's default is 2.
	TransactionVersion int16
	// MaxTimeout is transaction.max.timeout.ms (default 15 min).
	MaxTimeout time.Duration
	// AbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms
	// (default 10 s): how often expired transactions are looked for.
	AbortCheckInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms (default 7 days): a
	// transactional id with no transaction open (Empty, CompleteCommit,
	// CompleteAbort) and no state change for this long is removed from
	// __transaction_state with a tombstone, as Kafka does; its next
	// InitProducerId gets a new producer id.
	IDExpiration time.Duration
	// IDExpirationCheckInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (default
	// 1 h): how often expired transactional ids are looked for.
	IDExpirationCheckInterval time.Duration
	// CommitTimeout bounds the wait for a state record to be replicated
	// (default 5 s).
	CommitTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NodeID is this node's id: ListTransactions counts a state
	// partition the control plane names this node the leader of as
	// loading until its replica leads it.
	NodeID int32
	// Authorizer checks the transaction APIs' ACLs (Write on the
	// transactional id, the topics' and groups'); nil allows everything.
	Authorizer *authz.Authorizer
}

func (c *Config) setDefaults() {
	if c.Partitions <= 0 {
		c.Partitions = 50
	}
	if c.ReplicationFactor <= 0 {
		c.ReplicationFactor = 3
	}
	if c.MinISR <= 0 {
		c.MinISR = 2
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 15 * time.Minute
	}
	if c.AbortCheckInterval <= 0 {
		c.AbortCheckInterval = 10 * time.Second
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = 7 * 24 * time.Hour
	}
	if c.IDExpirationCheckInterval <= 0 {
		c.IDExpirationCheckInterval = time.Hour
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Cluster is what the coordinator needs of the control plane.
type Cluster interface {
	coordinator.Cluster
	// Partitions is the number of partitions of topic, false when the
	// topic does not exist.
	Partitions(topic string) (int32, bool)
	// EnsureOffsetsTopic creates __consumer_offsets as the group
	// coordinator's FindCoordinator does unless it exists, and returns the
	// partition count the group coordinator maps groups with
	// (offsets.topic.num.partitions).
	EnsureOffsetsTopic(ctx context.Context) (int32, error)
}

// ProducerIDs hands out cluster-unique producer ids.
type ProducerIDs interface {
	NextProducerID(ctx context.Context) (int64, error)
}

// Markers is one WriteTxnMarkers marker: the end of one producer's
// transaction on the given partitions.
type Markers struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion is what the markers say (WriteTxnMarkers v2,
	// KIP-1228): 2 for the end of a transactions v2 transaction that
	// bumped its epoch, 0 otherwise.
	TransactionVersion int8
	Partitions         []TopicPartition
}

// MarkerWriter writes transaction markers to the leaders of their
// partitions. WriteMarkers returns an error for each partition that does
// not have the marker yet (nil map: all have it); the coordinator retries
// those, except a partition that the control plane no longer has (its
// topic was deleted).
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, m Markers) map[TopicPartition]error
}

// Coordinator is this node's transaction coordinator. It is safe for
// concurrent use; Close stops it.
type Coordinator struct {
	cfg     Config
	leaders partition.Leaders
	cluster Cluster
	pids    ProducerIDs
	markers MarkerWriter
	log     *slog.Logger
	// refusedLog paces the Warn lines of refused marker connections.
	refusedLog everyInterval
	counts     counters

	// rt runs the shards: one per __transaction_state partition this
	// node leads, loaded on leadership.
	rt *coordinator.Runtime[*shard]
}

// shard is one __transaction_state partition this node leads, in one
// leader epoch (a coordinator.Shard).
type shard struct {
	c         *Coordinator
	partition int32
	replica   *partition.Replica
	epoch     int32           // the leader epoch it was loaded in: the coordinator epoch
	ctx       context.Context // cancelled on unload

	loaded  map[string]*txnMeta // what Load read, until Activate
	skipped int

	mu struct {
		sync.Mutex
		ready    bool
		unloaded bool
		txns     map[string]*txnMeta
		pending  map[string]bool // a state write in flight
	}
}

// New returns a coordinator serving the transactional ids whose state
// partitions leaders says this node leads. It starts the timeout loop.
func New(cfg Config, leaders partition.Leaders, cluster Cluster, pids ProducerIDs, markers MarkerWriter) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, leaders: leaders, cluster: cluster, pids: pids, markers: markers, log: cfg.Logger.With("component", "txn")}
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Topic: StateTopic, Partitions: cfg.Partitions, NodeID: cfg.NodeID, Leaders: leaders, Cluster: cluster, Logger: c.log,
		NewShard: func(p *coordinator.Partition) *shard {
			sh := &shard{c: c, partition: p.Index, replica: p.Replica, epoch: p.Epoch, ctx: p.Context()}
			sh.mu.txns, sh.mu.pending = map[string]*txnMeta{}, map[string]bool{}
			return sh
		},
	})
	c.rt.Go(c.abortExpiredLoop)
	return c
}

// TransactionVersionFeature is the name of Kafka's feature flag for the
// transaction protocol version (KIP-890): level 2 is transactions v2.
const TransactionVersionFeature = "transaction.version"

// Register serves the coordinator's APIs on reg (InitProducerId is
// ingest's, which calls InitProducerID) and advertises the
// transaction.version feature at its configured level.
func (c *Coordinator) Register(reg *kafka.Registry) {
	reg.SetFeature(kafka.Feature{Name: TransactionVersionFeature, MinLevel: 0, MaxLevel: 2, Finalized: c.cfg.TransactionVersion})
	reg.Register(kmsg.AddPartitionsToTxn, 0, 5, c.handleAddPartitionsToTxn)
	reg.Register(kmsg.AddOffsetsToTxn, 0, 4, c.handleAddOffsetsToTxn)
	reg.Register(kmsg.EndTxn, 0, 5, c.handleEndTxn)
	reg.Register(kmsg.DescribeTransactions, 0, 0, c.handleDescribeTransactions)
	reg.Register(kmsg.ListTransactions, 0, 2, c.handleListTransactions)
}

// Close stops the coordinator and waits for its goroutines (marker
// senders included). Idempotent.
func (c *Coordinator) Close() { c.rt.Close() }

// lookup returns the loaded shard of transactional id.
func (c *Coordinator) lookup(id string) (*shard, error) {
	return c.lookupPartition(PartitionFor(id, c.cfg.Partitions))
}

// LeadershipChanged tells the coordinator that this node's role for
// __transaction_state partition p may have changed (the replica manager
// calls it after applying a role). When this node leads p in a leader
// epoch it has not loaded, the partition starts loading at once, as
// Kafka's TransactionCoordinator.onElection does; when it does not lead
// p, its shard unloads. It never waits for I/O and is safe to call from
// any goroutine; a partition outside transaction.state.log.num.partitions
// is ignored.
func (c *Coordinator) LeadershipChanged(p int32) { c.rt.LeadershipChanged(p) }

// LoadLed starts loading every state partition this node leads and has
// not loaded (LeadershipChanged for each), for the roles applied before
// the node's leadership notifications reached the coordinator.
func (c *Coordinator) LoadLed() { c.rt.LoadLed() }

// lookupPartition returns the loaded shard of state partition p
// (ErrLoadInProgress while it loads, ErrNotCoordinator when this node
// does not lead it).
func (c *Coordinator) lookupPartition(p int32) (*shard, error) {
	sh, err := c.rt.Shard(p)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	unloaded := sh.mu.unloaded
	sh.mu.Unlock()
	if unloaded {
		return nil, fmt.Errorf("%w: %s-%d unloaded", ErrNotCoordinator, StateTopic, p)
	}
	return sh, nil
}

// listable returns the loaded shards of every state partition this node
// leads (ListTransactions), or ErrLoadInProgress while one of them is not
// loaded (coordinator.Runtime.Listable). Kafka's listTransactionStates
// answers COORDINATOR_LOAD_IN_PROGRESS while any partition loads, too.
func (c *Coordinator) listable() ([]*shard, error) { return c.rt.Listable() }

// readyShards are the loaded shards (ListTransactions, the timeout loop).
func (c *Coordinator) readyShards() []*shard { return c.rt.Ready() }

// Unload marks sh unloaded: its writes answer NOT_COORDINATOR and its
// marker senders stop (the runtime cancels sh.ctx after).
func (sh *shard) Unload() {
	sh.mu.Lock()
	sh.mu.unloaded = true
	sh.mu.Unlock()
}

// write runs one state transition of id: decide gets the current state
// (nil: unknown id) and returns the next (nil: nothing to write, the
// current state stands). The next state is appended and replaces the
// current one once replicated; meanwhile the id is pending and other
// transitions get ErrConcurrentTransactions. It returns the state that
// holds after the call.
func (c *Coordinator) write(ctx context.Context, sh *shard, id string, decide func(cur *txnMeta) (*txnMeta, error)) (*txnMeta, error) {
	sh.mu.Lock()
	if sh.mu.unloaded {
		sh.mu.Unlock()
		return nil, ErrNotCoordinator
	}
	if sh.mu.pending[id] {
		sh.mu.Unlock()
		return nil, ErrConcurrentTransactions
	}
	cur := sh.mu.txns[id]
	next, err := decide(cur)
	if err != nil || next == nil {
		sh.mu.Unlock()
		return cur, err
	}
	next.lastUpdate = c.cfg.Now().UnixMilli()
	off, epoch, err := c.append(sh, id, next)
	if err != nil {
		sh.mu.Unlock()
		return nil, err
	}
	sh.mu.pending[id] = true
	sh.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	err = sh.replica.WaitCommitted(wctx, off, epoch)
	cancel()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.mu.pending, id)
	switch {
	case sh.mu.unloaded:
		return nil, ErrNotCoordinator
	case errors.Is(err, partition.ErrNotLeader), errors.Is(err, partition.ErrClosed):
		return nil, fmt.Errorf("%w: %w", ErrNotCoordinator, err)
	case err != nil:
		// Kafka answers a state write that is not replicated in time
		// COORDINATOR_NOT_AVAILABLE and keeps the old state; the record
		// may still commit, and the next coordinator loads it.
		return nil, fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, err)
	}
	if next.state == kmsg.TransactionStateDead {
		delete(sh.mu.txns, id)
		return next, nil
	}
	sh.mu.txns[id] = next
	return next, nil
}

// append writes m's record to sh's partition. REQUIRES: sh.mu held.
func (c *Coordinator) append(sh *shard, id string, m *txnMeta) (int64, int32, error) {
	opts := batch.NoProducer()
	opts.FirstTimestamp = m.lastUpdate
	var value []byte // a tombstone for Dead
	if m.state != kmsg.TransactionStateDead {
		value = stateValue(m)
	}
	b, err := batch.Build(nil, opts, []batch.Record{{Key: stateKey(id), Value: value}})
	if err != nil {
		return -1, 0, err
	}
	res, err := sh.replica.AppendLeader(b)
	if err != nil {
		return -1, 0, fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, StateTopic, sh.partition, err)
	}
	return res.LastOffset, res.LeaderEpoch, nil
}

// startCompletion sends m's markers in the background, then writes its
// Complete state. m is a Prepare state that is replicated.
// Once the coordinator is closing, the next coordinator resumes it from
// the log.
func (c *Coordinator) startCompletion(sh *shard, m *txnMeta) {
	c.rt.Go(func() { c.complete(sh, m) })
}

// markerRefusedForGood reports whether a partition's answer to a marker
// means no retry can succeed, as Kafka's
// TransactionMarkerRequestCompletionHandler judges it:
// INVALID_PRODUCER_EPOCH (the partition holds a newer epoch of the
// producer than the marker's) or TRANSACTION_COORDINATOR_FENCED (a
// coordinator of a newer epoch wrote a marker for the producer there).
// Kafka then stops sending the transaction's markers and leaves its
// state alone; Shale gives up only that partition and completes the
// transaction, whose Complete record the state partition's leadership
// fences: a stale coordinator cannot write it, and a current one must,
// or the id answers CONCURRENT_TRANSACTIONS forever.
func markerRefusedForGood(err error) bool {
	switch ErrorCode(err) {
	case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		return true
	}
	return false
}

// markerBackoff bounds the pause between two rounds of marker writes.
const markerBackoff = time.Second

// loadCheckInterval is how often the coordinator looks for state
// partitions it leads and has not loaded: loads start on leadership
// (LeadershipChanged), and this retries one that failed.
const loadCheckInterval = time.Second

// complete writes m's markers to every partition of its transaction,
// retrying those that fail until each has one or the shard is unloaded
// (the next coordinator resumes from the Prepare state it loads), then
// writes the Complete state. A partition that no longer exists, or that
// refuses the marker for good (markerRefusedForGood), is given up, as
// Kafka's marker sender gives it up: retrying it would hold the id in its
// Prepare state forever.
func (c *Coordinator) complete(sh *shard, m *txnMeta) {
	mk := Markers{ProducerID: m.producerID, ProducerEpoch: m.epoch, Commit: m.state == kmsg.TransactionStatePrepareCommit,
		CoordinatorEpoch: sh.epoch, TransactionVersion: int8(m.markerTV), Partitions: m.sortedPartitions()}
	pause := 50 * time.Millisecond
	for len(mk.Partitions) > 0 {
		errs := c.markers.WriteMarkers(sh.ctx, mk)
		var left []TopicPartition
		for _, tp := range mk.Partitions {
			err, failed := errs[tp]
			switch {
			case !failed || err == nil:
			case !c.partitionExists(tp):
				c.log.Warn("dropping the marker of a partition that no longer exists", "transactional_id", m.id, "topic", tp.Topic, "partition", tp.Partition)
			case markerRefusedForGood(err):
				c.log.Warn("dropping a transaction marker the partition refuses for good", "transactional_id", m.id,
					"topic", tp.Topic, "partition", tp.Partition, "producer_id", m.producerID, "producer_epoch", m.epoch,
					"coordinator_epoch", sh.epoch, "err", err)
			default:
				left = append(left, tp)
			}
		}
		if len(left) > 0 && sh.ctx.Err() == nil {
			if err := errs[left[0]]; interbroker.Refused(err) && c.refusedLog.allow(time.Now()) {
				c.log.Warn("transaction markers: a partition leader refused this node's inter-broker connection; retrying",
					"transactional_id", m.id, "partitions", len(left), "err", err)
			} else {
				c.log.Debug("retrying transaction markers", "transactional_id", m.id, "partitions", len(left), "err", err)
			}
		}
		mk.Partitions = left
		if len(left) == 0 {
			break
		}
		select {
		case <-sh.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, markerBackoff)
	}
	for attempt := 0; sh.ctx.Err() == nil; attempt++ {
		_, err := c.write(sh.ctx, sh, m.id, func(cur *txnMeta) (*txnMeta, error) {
			if cur == nil || cur.producerID != m.producerID || cur.epoch != m.epoch || cur.state != m.state {
				return nil, nil // completed already, or replaced
			}
			return cur.completed(), nil
		})
		if err == nil {
			if m.state == kmsg.TransactionStatePrepareCommit {
				c.counts.committed.Add(1)
			} else {
				c.counts.aborted.Add(1)
			}
			return
		}
		if errors.Is(err, ErrNotCoordinator) {
			return
		}
		c.log.Warn("writing the completed transaction state failed", "transactional_id", m.id, "attempt", attempt, "err", err)
		select {
		case <-sh.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, markerBackoff)
	}
}

// abortExpiredLoop aborts, every AbortCheckInterval, the ongoing
// transactions older than their timeout, bumping the epoch so that the
// producer is fenced (Kafka's abortTimedOutTransactions).
//
// It also loads, every loadCheckInterval, each state partition this node
// leads and has not loaded: LeadershipChanged starts the load on
// election, as Kafka's coordinator does, and this retries a load that
// failed, so that no partition stays unloaded with its Prepare states
// without their markers and its expired transactions (a producer that
// died with one open) never aborted.
func (c *Coordinator) abortExpiredLoop() {
	t := time.NewTicker(c.cfg.AbortCheckInterval)
	defer t.Stop()
	load := time.NewTicker(loadCheckInterval)
	defer load.Stop()
	expire := time.NewTicker(c.cfg.IDExpirationCheckInterval)
	defer expire.Stop()
	for {
		select {
		case <-c.rt.Context().Done():
			return
		case <-load.C:
			c.rt.LoadLed() // loads, or unloads a partition led elsewhere
			continue
		case <-expire.C:
			c.expireIDs(c.cfg.Now().UnixMilli())
			continue
		case <-t.C:
		}
		now := c.cfg.Now().UnixMilli()
		for _, sh := range c.readyShards() {
			for _, id := range sh.expired(now) {
				next, err := c.write(sh.ctx, sh, id, func(cur *txnMeta) (*txnMeta, error) {
					if cur == nil || !cur.expired(now) {
						return nil, nil
					}
					return cur.fenceAndAbort(), nil
				})
				if err != nil {
					c.log.Warn("aborting an expired transaction failed", "transactional_id", id, "err", err)
					continue
				}
				if next != nil && next.state == kmsg.TransactionStatePrepareAbort {
					c.log.Info("aborting a transaction past its timeout", "transactional_id", id, "producer_id", next.producerID, "epoch", next.epoch)
					c.counts.timedOut.Add(1)
					c.startCompletion(sh, next)
				}
			}
		}
	}
}

// expireIDs removes the transactional ids idle for longer than
// IDExpiration at now (Kafka's removeExpiredTransactionalIds): each gets a
// tombstone in its state partition and leaves the coordinator's memory
// once that is replicated.
func (c *Coordinator) expireIDs(now int64) {
	limit := c.cfg.IDExpiration.Milliseconds()
	for _, sh := range c.readyShards() {
		for _, id := range sh.idle(now, limit) {
			next, err := c.write(sh.ctx, sh, id, func(cur *txnMeta) (*txnMeta, error) {
				if cur == nil || !cur.idle(now, limit) {
					return nil, nil
				}
				n := cur.clone()
				n.state = kmsg.TransactionStateDead
				return n, nil
			})
			switch {
			case err != nil:
				c.log.Warn("expiring a transactional id failed", "transactional_id", id, "err", err)
			case next != nil && next.state == kmsg.TransactionStateDead:
				c.log.Info("expired an idle transactional id", "transactional_id", id, "producer_id", next.producerID)
			}
		}
	}
}

// idle reports whether m has no transaction open and no change for longer
// than limit ms at now (transactional.id.expiration.ms).
func (m *txnMeta) idle(now, limit int64) bool {
	switch m.state {
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		return now-m.lastUpdate > limit
	}
	return false
}

// idle lists sh's transactional ids idle for longer than limit ms at now.
func (sh *shard) idle(now, limit int64) []string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out []string
	for id, m := range sh.mu.txns {
		if !sh.mu.pending[id] && m.idle(now, limit) {
			out = append(out, id)
		}
	}
	return out
}

// expired reports whether m is an ongoing transaction past its timeout at now.
func (m *txnMeta) expired(now int64) bool {
	return m.state == kmsg.TransactionStateOngoing && m.start >= 0 && now-m.start > int64(m.timeoutMs)
}

// expired lists sh's transactions past their timeout at now.
func (sh *shard) expired(now int64) []string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out []string
	for id, m := range sh.mu.txns {
		if !sh.mu.pending[id] && m.expired(now) {
			out = append(out, id)
		}
	}
	return out
}

// FindCoordinator is the broker leading id's state partition, creating
// __transaction_state on first use (FindCoordinator key type 1).
func (c *Coordinator) FindCoordinator(ctx context.Context, id string) (coordinator.Broker, error) {
	if id == "" {
		return coordinator.Broker{}, fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	p := PartitionFor(id, c.cfg.Partitions)
	if b, ok := c.cluster.PartitionLeader(StateTopic, p); ok {
		return b, nil
	}
	shape := c.StateTopicShape()
	if err := c.cluster.EnsureTopic(ctx, StateTopic, shape.Partitions, shape.ReplicationFactor, shape.Configs); err != nil {
		return coordinator.Broker{}, fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, StateTopic, err)
	}
	b, ok := c.cluster.PartitionLeader(StateTopic, p)
	if !ok {
		return coordinator.Broker{}, fmt.Errorf("%w: %s-%d has no leader", ErrCoordinatorNotAvailable, StateTopic, p)
	}
	return b, nil
}

// partitionExists reports whether the control plane has tp.
func (c *Coordinator) partitionExists(tp TopicPartition) bool {
	n, ok := c.cluster.Partitions(tp.Topic)
	return ok && tp.Partition < n
}

// everyInterval allows one event per refusedLogInterval. Safe for
// concurrent use; the zero value is ready.
type everyInterval struct{ last atomic.Int64 }

// refusedLogInterval is how often a refused marker connection is logged
// at Warn.
const refusedLogInterval = 30 * time.Second

func (e *everyInterval) allow(now time.Time) bool {
	last := e.last.Load()
	return (last == 0 || now.UnixNano()-last >= int64(refusedLogInterval)) && e.last.CompareAndSwap(last, now.UnixNano())
}
