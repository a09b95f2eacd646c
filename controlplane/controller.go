package controlplane

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

	"github.com/nats-io/nats.go/jetstream"
)

// BucketController holds the controller lease: one key, created only if
// absent, renewed by revision, expiring with the bucket's TTL.
const BucketController = "shale_controller"

// ControllerLeaseKey is the lease's key in BucketController; its value is
// the holder's node id.
const ControllerLeaseKey = "lease"

// ControllerConfig configures a node's controller candidate.
type ControllerConfig struct {
	// NodeID is this node's broker id.
	NodeID int32
	// LeaseTTL is how long a lease lives without renewal; another node takes
	// over within about this time after the controller dies. Default 3 s.
	LeaseTTL time.Duration
	// Unclean reports unclean.leader.election.enable for a topic. Nil: false.
	Unclean func(topic string) bool
	// MinISR reports min.insync.replicas for a topic. Nil: 1.
	MinISR func(topic string) int
	// Logger; default slog.Default().
	Logger *slog.Logger

	// AutoLeaderRebalance is auto.leader.rebalance.enable: the controller
	// moves leadership back to preferred replicas (leader_balance.go).
	// The zero value is off; the broker's configuration turns it on.
	AutoLeaderRebalance bool
	// LeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds: how often the controller
	// checks, the first time one interval after it takes the lease.
	// Default 300 s.
	LeaderImbalanceCheckInterval time.Duration
	// LeaderImbalancePerBrokerPercentage is
	// leader.imbalance.per.broker.percentage (0..100).
	LeaderImbalancePerBrokerPercentage int

	// ReconcileInterval is how often the controller decides every
	// partition again although no event asked for it (reconcile_work.go).
	// Default 30 s.
	ReconcileInterval time.Duration

	// Balancer is the replica balancer (balancer.go, balancer_run.go).
	// The zero value is off; the broker's configuration turns it on.
	Balancer BalancerConfig

	// Dial opens the liveness prober's tripwires (liveness.go): idle
	// connections to the probed brokers' Kafka addresses, which end when
	// their process does. The node passes its inter-broker dialer, so that
	// a TLS listener sees a completed handshake. Nil: plain TCP.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Controller is a node's candidacy for the controller role. Every node runs
// one; the one holding the lease applies the election rules (election.go) to
// every partition whenever brokers come and go, by compare-and-set on the
// partition records, so a deposed controller's stale decision can never
// overwrite a newer one.
type Controller struct {
	store *Store
	kv    jetstream.KeyValue
	cfg   ControllerConfig
	log   *slog.Logger

	poke   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup

	holder  atomic.Int32 // the controller's node id as last seen, -1 unknown
	leading atomic.Bool  // this node holds the lease
	// Owned by the loop goroutine: the lease's current revision, the
	// revision it was created at (this tenure's controller epoch, which
	// fences its partition writes), and when it was last renewed.
	leaseRv   uint64
	epoch     uint64
	renewedAt time.Time
	// balancedAt is when the last preferred-leader pass ran (or this
	// tenure began); owned by the loop goroutine.
	balancedAt time.Time
	// bal is the replica balancer's state; owned by the loop goroutine.
	bal   balancerState
	unsub func()
	// grace is the session grace after a gap in this node's round trips
	// to the control plane (grace.go).
	grace sessionGrace
	// work is what the next reconcile pass visits (reconcile_work.go).
	work reconcileWork
	// Owned by the loop goroutine: when the last pass over every
	// partition began (zero: none this tenure), and the brokers graced
	// then.
	fullAt time.Time
	graced []int32
	// quiet is what the last pass over every partition decided from when
	// it was complete and changed nothing (quietPass).
	quiet quietPass
	// For tests: the steps the loop finished, the partitions reconcile
	// decided, the balancer passes that planned, and the liveness probes
	// sent (liveness.go).
	steps, visits, plans, probes atomic.Int64
}

// StartController joins the controller election.
func StartController(ctx context.Context, s *Store, cfg ControllerConfig) (*Controller, error) {
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 3 * time.Second
	}
	if cfg.LeaseTTL < time.Second {
		return nil, fmt.Errorf("controlplane: controller lease %v: want at least 1s", cfg.LeaseTTL)
	}
	if cfg.Unclean == nil {
		cfg.Unclean = func(string) bool { return false }
	}
	if cfg.MinISR == nil {
		cfg.MinISR = func(string) int { return 1 }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReconcileInterval <= 0 {
		cfg.ReconcileInterval = reconcileFullInterval
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if p := cfg.LeaderImbalancePerBrokerPercentage; p < 0 || p > 100 {
		return nil, fmt.Errorf("controlplane: leader.imbalance.per.broker.percentage %d: want 0..100", p)
	}
	cfg.Balancer = cfg.Balancer.withDefaults()
	kv, err := s.bucket(ctx, jetstream.KeyValueConfig{
		Bucket: BucketController, History: 1, TTL: cfg.LeaseTTL,
		Replicas: max(s.cfg.Replicas, 1), Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	c := &Controller{store: s, kv: kv, cfg: cfg, log: cfg.Logger.With("component", "controller"),
		poke: make(chan struct{}, 1), cancel: cancel}
	c.holder.Store(-1)
	c.unsub = s.Subscribe(func(ev Event) {
		if c.work.observe(ev) {
			c.Poke()
		}
	})
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.loop(lctx)
	}()
	go func() {
		defer c.wg.Done()
		c.probeLoop(lctx) // liveness.go
	}()
	return c, nil
}

// Poke asks the loop to run now.
func (c *Controller) Poke() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// ID is the node id of the current controller as this node last saw it, or
// -1 when unknown.
func (c *Controller) ID() int32 { return c.holder.Load() }

// IsController reports whether this node holds the lease.
func (c *Controller) IsController() bool { return c.leading.Load() }

// Close stops the loop and, when holding the lease, releases it so another
// node takes over at once.
func (c *Controller) Close() {
	c.unsub()
	c.cancel()
	c.wg.Wait()
	if c.leading.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := c.kv.Delete(ctx, ControllerLeaseKey, jetstream.LastRevision(c.leaseRv)); err != nil {
			c.log.Debug("releasing the controller lease", "err", err)
		}
		c.leading.Store(false)
	}
}

func (c *Controller) loop(ctx context.Context) {
	for {
		wait := c.cfg.LeaseTTL / 3
		if !c.step(ctx) {
			wait = keepaliveRetry // the lease's renewal got no answer: try again soon
		}
		c.steps.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-c.poke:
			t.Stop()
		}
	}
}

// step renews or acquires the lease, then, as controller, reconciles every
// partition with the live brokers. It returns false when the controller's
// renewal of its lease got no answer: the lease may still be its own (it
// lives LeaseTTL from the last renewal), so it stays controller, writes
// nothing (reconcile waits for a fresh renewal), and the loop retries
// soon; a renewal refused (the lease's revision moved, or it is gone), or
// none for LeaseTTL, ends the tenure.
func (c *Controller) step(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
	defer cancel()
	me := []byte(strconv.FormatInt(int64(c.cfg.NodeID), 10))
	start, reached := time.Now(), false
	if c.leading.Load() {
		renewStart := time.Now()
		rev, err := c.kv.Update(rctx, ControllerLeaseKey, me, c.leaseRv)
		switch {
		case err == nil:
			c.leaseRv, c.renewedAt, reached = rev, renewStart, true
		case isWrongLastSeq(err) || isKeyGone(err) || time.Since(c.renewedAt) > c.cfg.LeaseTTL:
			c.log.Warn("controller lease lost", "err", err)
			c.leading.Store(false)
		default:
			c.log.Debug("controller lease renewal got no answer; retrying", "err", err,
				"renewed_ago", time.Since(c.renewedAt).Round(time.Millisecond))
			c.observeRoundTrip(start, false)
			return false
		}
	}
	if !c.leading.Load() {
		// A candidate reads the lease first and tries to take it only
		// when nobody holds it: a held lease answers the read, where a
		// create would be refused and need the read anyway (two requests
		// a step for each candidate, most of an idle cluster's lease
		// traffic on NATS).
		entry, gerr := c.kv.Get(rctx, ControllerLeaseKey)
		switch {
		case gerr == nil:
			reached = true
			if id, perr := strconv.ParseInt(string(entry.Value()), 10, 32); perr == nil {
				c.holder.Store(int32(id))
			}
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			reached = true
			c.holder.Store(-1)
			createStart := time.Now()
			if rev, err := c.kv.Create(rctx, ControllerLeaseKey, me); err == nil {
				c.leaseRv, c.epoch, c.renewedAt = rev, rev, createStart
				c.balancedAt = createStart
				c.fullAt = time.Time{} // a new tenure begins with a pass over every partition
				c.quiet = quietPass{}
				c.bal.quiet = false
				c.leading.Store(true)
				c.log.Info("became controller", "lease_revision", rev)
			} else if entry, gerr := c.kv.Get(rctx, ControllerLeaseKey); gerr == nil {
				// Another candidate took it first.
				if id, perr := strconv.ParseInt(string(entry.Value()), 10, 32); perr == nil {
					c.holder.Store(int32(id))
				}
			} else {
				c.log.Debug("taking the controller lease", "err", err)
			}
		}
	}
	c.observeRoundTrip(start, reached && !c.store.keepaliveImpaired(time.Now()))
	if !c.leading.Load() {
		return true
	}
	c.holder.Store(c.cfg.NodeID)
	c.reconcile(ctx)
	if len(c.grace.grantedIDs(time.Now())) > 0 {
		return true // no balancing while brokers' sessions are on grace: the view is partial
	}
	moved := c.leading.Load() && c.balanceReplicas(ctx) // balancer_run.go
	if c.cfg.AutoLeaderRebalance && c.leading.Load() && (moved || time.Since(c.balancedAt) >= c.cfg.LeaderImbalanceCheckInterval) {
		c.balancedAt = time.Now()
		c.balanceLeaders(ctx)
	}
	return true
}

// reconcileWrites bounds how many partition writes one reconcile pass has
// in flight: each is a round trip to the control plane, and one after
// another they made a 200-partition CreateTopics wait 16 s on a loaded
// machine (and 10,000 partitions minutes). After a broker loss at 10,000
// partitions (BenchmarkElectAfterBrokerLoss, 3,333 elections on one NATS
// server), 32 in flight elected about 3,400 a second, 128 about 5,000,
// 256 no more.
const reconcileWrites = 128

// reconcile applies ReconcilePartition to the partitions that may need
// it: every partition on the first pass of a tenure, after an event that
// can move any of them (reconcileWork), when the brokers on a session
// grace changed, and every ReconcileInterval; otherwise only those
// whose state changed since the last pass. An idle cluster costs no
// per-partition work here.
func (c *Controller) reconcile(ctx context.Context) {
	gen := c.store.gen.Load() // before the work and the view: a change after it is seen next time
	all, parts := c.work.take()
	now := time.Now()
	graced := c.grace.grantedIDs(now)
	if c.fullAt.IsZero() || now.Sub(c.fullAt) >= c.cfg.ReconcileInterval || !slices.Equal(graced, c.graced) {
		all = true
	}
	c.graced = graced
	topics := map[string]topicSettings{}
	if all {
		c.fullAt = now
		topics = c.topicSettings()
		if c.quiet.holds(gen, graced, topics) {
			return // the same inputs as the last quiet pass: it would decide the same
		}
	} else if len(parts) == 0 {
		return
	}
	c.quiet = quietPass{}
	complete, changed := c.reconcileParts(ctx, graced, all, parts, topics)
	if all && complete && changed == 0 {
		c.quiet = quietPass{ok: true, gen: gen, graced: graced, topics: topics}
	}
	if !complete && c.leading.Load() {
		// The pass stopped early (its lease renewal is LeaseTTL/2 old, or
		// a write was refused): the next one visits everything, and starts
		// at once, renewing the lease first, not LeaseTTL/3 later (after a
		// broker loss at 10,000 partitions that wait paused the elections).
		c.work.markAll()
		c.Poke()
	}
}

// topicSettings are the per-topic inputs of an election that reach the
// controller through ControllerConfig's functions, not as store events.
type topicSettings struct {
	unclean bool
	minISR  int
}

// topicSettings reads every topic's election settings now.
func (c *Controller) topicSettings() map[string]topicSettings {
	out := map[string]topicSettings{}
	for _, t := range c.store.Topics() {
		out[t.Name] = topicSettings{c.cfg.Unclean(t.Name), c.cfg.MinISR(t.Name)}
	}
	return out
}

// quietPass records the inputs of a pass over every partition that was
// complete and found nothing to change: the store's generation read
// before it (every change the cache applies that publishes an event moves
// it on), the brokers on a session grace, and every topic's election
// settings. ReconcilePartition is a function of those alone, so while all
// three hold another pass over every partition would decide the same: the
// safety-net pass every ReconcileInterval then reads the topics' settings
// (what can change with no event) and passes over the partitions, which
// at 10,000 partitions allocated about 10 MB a pass. Owned by the loop
// goroutine; the zero value holds nothing.
type quietPass struct {
	ok     bool
	gen    uint64
	graced []int32
	topics map[string]topicSettings
}

func (q quietPass) holds(gen uint64, graced []int32, topics map[string]topicSettings) bool {
	return q.ok && q.gen == gen && slices.Equal(q.graced, graced) && maps.Equal(q.topics, topics)
}

// reconcileParts decides every partition (all) or those in parts, writing
// the changed ones with up to reconcileWrites in flight (each partition is
// its own key, written at the revision it was decided from), with the
// topics' election settings in topics (read into it for a topic not in
// it). It reports whether it decided every partition it was asked to, and
// how many decisions changed a partition (written or not).
func (c *Controller) reconcileParts(ctx context.Context, graced []int32, all bool, parts map[PartitionKey]struct{}, topics map[string]topicSettings) (complete bool, changed int) {
	settings := func(topic string) topicSettings {
		ts, ok := topics[topic]
		if !ok {
			ts = topicSettings{c.cfg.Unclean(topic), c.cfg.MinISR(topic)}
			topics[topic] = ts
		}
		return ts
	}
	views := c.store.electionViews(graced)
	sem := make(chan struct{}, reconcileWrites)
	var wg sync.WaitGroup
	defer wg.Wait()
	var deposed atomic.Bool
	decide := func(st PartitionState, unclean bool, minISR int) bool {
		if deposed.Load() {
			return false
		}
		c.visits.Add(1)
		v := views(st, minISR, unclean)
		d := ReconcilePartition(st, v)
		if d.Changed {
			changed++
		}
		if !d.Changed || !c.leading.Load() {
			return true
		}
		next, err := FenceController(st, d.State, c.epoch)
		if errors.Is(err, ErrControllerFenced) && c.stillHoldsLease(ctx) {
			// No newer lease can exist while this one was renewed by
			// revision: the record's epoch comes from a controller bucket
			// that was deleted and created again. Take the record over.
			c.log.Error("partition carries a controller epoch above the current lease's; overwriting", "topic", st.Topic,
				"partition", st.Partition, "controller_epoch", c.epoch, "partition_controller_epoch", st.ControllerEpoch)
			next, err = d.State, nil
			next.ControllerEpoch = c.epoch
		}
		if err != nil {
			return !c.reconciled(st.Topic, st, d, err)
		}
		if time.Since(c.renewedAt) > c.cfg.LeaseTTL/2 {
			return false // the lease may have lapsed: renew before writing more
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			uctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
			_, err := c.store.UpdatePartition(uctx, next)
			cancel()
			// The slot is the write's: the outcome's log line waits for
			// the logger's lock outside it (in a failover at 10,000
			// partitions a quarter of a slot's time went to that wait,
			// while the pass waited for slots).
			<-sem
			if c.reconciled(st.Topic, st, d, err) {
				deposed.Store(true)
			}
		}()
		return true
	}
	if all {
		for _, t := range c.store.Topics() {
			ts := settings(t.Name)
			for _, st := range c.store.Partitions(t.Name) {
				if !decide(st, ts.unclean, ts.minISR) {
					return false, changed
				}
			}
		}
		return true, changed
	}
	for k := range parts {
		st, ok := c.store.Partition(k.Topic, k.Partition)
		if !ok {
			continue // deleted since
		}
		ts := settings(k.Topic)
		if !decide(st, ts.unclean, ts.minISR) {
			return false, changed
		}
	}
	return true, changed
}

// reconciled logs the outcome of writing decision d for partition st and
// reports whether it deposed this controller (a newer one wrote first).
func (c *Controller) reconciled(topic string, st PartitionState, d Decision, err error) (deposed bool) {
	switch {
	case errors.Is(err, ErrControllerFenced):
		c.log.Warn("deposed: a newer controller wrote a partition", "topic", topic, "partition", st.Partition,
			"controller_epoch", c.epoch, "partition_controller_epoch", st.ControllerEpoch)
		c.leading.Store(false)
		return true
	case err == nil:
		if st.Reassigning() && !d.State.Reassigning() {
			c.log.Info("reassignment completed", "topic", topic, "partition", st.Partition,
				"replicas", d.State.Replicas, "leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch)
		} else if d.Reregistered {
			c.log.Info("leader registered again; new leader epoch", "topic", topic, "partition", st.Partition,
				"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch, "isr", d.State.ISR)
		} else if d.LeaderChanged {
			c.log.Info("elected leader", "topic", topic, "partition", st.Partition,
				"leader", d.State.Leader, "leader_epoch", d.State.LeaderEpoch, "isr", d.State.ISR, "elr", d.State.ELR)
		} else {
			c.log.Info("partition changed", "topic", topic, "partition", st.Partition,
				"leader", d.State.Leader, "isr", d.State.ISR, "elr", d.State.ELR)
		}
	case errors.Is(err, ErrConflict):
		c.work.mark(PartitionKey{topic, st.Partition})
		c.Poke() // someone wrote first: decide again on the fresh state
	default:
		c.log.Warn("updating partition", "topic", topic, "partition", st.Partition, "err", err)
	}
	return false
}

// observeRoundTrip records this step's round trip to the control plane,
// started at start, and grants the session grace after a gap (grace.go).
func (c *Controller) observeRoundTrip(start time.Time, reached bool) {
	var live []int32
	for _, b := range c.store.Brokers() {
		live = append(live, b.NodeID)
	}
	now := time.Now()
	granted := c.grace.observe(start, now, reached, live, c.store.cfg.KeepaliveInterval, c.store.cfg.BrokerTTL)
	if len(granted) > 0 {
		c.log.Info("control plane answers again after a gap; brokers live before it keep their sessions for a grace",
			"brokers", granted, "grace", c.store.cfg.BrokerTTL, "controller", c.leading.Load())
	}
}

// FenceController stamps a controller's decision next, made from the state
// st it read, with the controller's epoch (its lease's creation revision).
// ErrControllerFenced when st was last written by a controller with a newer
// epoch: this one is deposed and must not write (Kafka's controller epoch
// check). The compare-and-set on st's revision then makes the check exact:
// the write lands only on the record that was checked.
func FenceController(st, next PartitionState, epoch uint64) (PartitionState, error) {
	if st.ControllerEpoch > epoch {
		return st, fmt.Errorf("%w: %s-%d written at controller epoch %d, this controller's is %d",
			ErrControllerFenced, st.Topic, st.Partition, st.ControllerEpoch, epoch)
	}
	next.ControllerEpoch = epoch
	return next, nil
}

// stillHoldsLease reads the lease key: this node's, at the revision it last
// renewed.
func (c *Controller) stillHoldsLease(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL/2)
	defer cancel()
	e, err := c.kv.Get(rctx, ControllerLeaseKey)
	return err == nil && e.Revision() == c.leaseRv && string(e.Value()) == strconv.FormatInt(int64(c.cfg.NodeID), 10)
}
