package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/shale-io/shale/partition"
)

// Shard is one coordinator's state of one partition of its internal topic
// in one leader epoch (Kafka's CoordinatorShard): a state machine the
// runtime loads on leadership and unloads when the leadership ends.
type Shard interface {
	// Load replays the partition (Partition.Replica) from its log start to
	// its log end, records and control markers, into state that is not
	// live yet. It runs once, on a goroutine of the runtime, at most
	// LoadParallelism at a time; an error drops the shard (the next
	// request or leadership change loads it again).
	Load() error
	// Activate makes the loaded state live: after it the runtime hands the
	// shard to requests. It is called once, after a Load that succeeded,
	// while the shard is still current, with the runtime's lock held: it
	// must not block (start goroutines with Runtime.Go).
	Activate()
	// Unload stops the shard: replaced by a newer leader epoch, its
	// leadership lost, its load failed, or the runtime closed. It is
	// called once, with the runtime's lock held, before or after Load (or
	// without one): it must not block. Partition.Context is cancelled
	// after it.
	Unload()
}

// Partition is what a shard is given of its partition. Its fields never
// change.
type Partition struct {
	Topic   string
	Index   int32
	Replica *partition.Replica
	// Epoch is the leader epoch the shard was loaded in (the coordinator
	// epoch of the transaction coordinator).
	Epoch int32
	ctx   context.Context
}

// Context is cancelled when the shard unloads or the runtime closes.
func (p *Partition) Context() context.Context { return p.ctx }

// LoadParallelism bounds the partitions a runtime reads at once: a node
// that becomes leader of many at a time (a restart, a failover) loads
// them side by side without reading fifty logs together.
const LoadParallelism = 4

// Config configures a Runtime.
type Config[S Shard] struct {
	// Topic is the internal topic, with Partitions partitions.
	Topic      string
	Partitions int32
	// NodeID is this node's id: Listable counts a partition the control
	// plane names this node the leader of as loading until its replica
	// leads it.
	NodeID int32
	// Leaders finds this node's leading replicas.
	Leaders partition.Leaders
	// Cluster is the control plane's view (nil: Listable trusts the
	// replicas alone).
	Cluster Cluster
	// NewShard makes the (not yet loaded) shard of a partition.
	NewShard func(p *Partition) S
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Runtime runs one coordinator's shards (Kafka's CoordinatorRuntime): one
// per partition of its internal topic that this node leads, keyed by
// leader epoch, loaded eagerly when the leadership arrives
// (LeadershipChanged) and unloaded when it ends (a new leader epoch, a
// role change, the replica closing). It tracks the goroutines of the
// coordinator on it. Safe for concurrent use; Close stops it.
type Runtime[S Shard] struct {
	cfg       Config[S]
	log       *slog.Logger
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	loadSlots chan struct{}

	mu struct {
		sync.Mutex
		slots  map[int32]*slot[S]
		closed bool
	}
	// gmu guards the goroutine count against Close's Wait. It is a leaf:
	// Go may be called with any lock held.
	gmu struct {
		sync.Mutex
		closed bool
	}
	wg sync.WaitGroup
}

// slot is the shard of one partition. Guarded by the runtime's mu, except
// part, which never changes.
type slot[S Shard] struct {
	part     *Partition
	shard    S
	cancel   context.CancelFunc
	ready    bool
	unloaded bool
}

// New returns a runtime with no shards.
func New[S Shard](cfg Config[S]) *Runtime[S] {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Runtime[S]{cfg: cfg, log: cfg.Logger, loadSlots: make(chan struct{}, LoadParallelism)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.mu.slots = map[int32]*slot[S]{}
	return r
}

// Context is cancelled by Close.
func (r *Runtime[S]) Context() context.Context { return r.ctx }

// Go runs fn on a goroutine that Close waits for; false (fn not run) once
// the runtime is closing. fn must return once Context is cancelled.
func (r *Runtime[S]) Go(fn func()) bool {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	if r.gmu.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
	return true
}

// Close unloads every shard, cancels Context and waits for the
// runtime's goroutines. Idempotent.
func (r *Runtime[S]) Close() {
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return
	}
	r.mu.closed = true
	for _, s := range r.mu.slots {
		r.unloadLocked(s)
	}
	r.mu.Unlock()
	r.cancel()
	r.gmu.Lock()
	r.gmu.closed = true
	r.gmu.Unlock()
	r.wg.Wait()
}

// HoldLoads takes every load slot, so that no load starts until the
// returned release is called (a test holds a partition in its loading
// state with it).
func (r *Runtime[S]) HoldLoads() (release func()) {
	for range LoadParallelism {
		r.loadSlots <- struct{}{}
	}
	return func() {
		for range LoadParallelism {
			<-r.loadSlots
		}
	}
}

// LeadershipChanged tells the runtime that this node's role for partition
// p may have changed (the replica manager calls it after applying a
// role). When this node leads p in a leader epoch it has not loaded, the
// partition starts loading at once, as Kafka's onElection does; when it
// does not lead p, its shard unloads. It never waits for I/O and is safe
// to call from any goroutine; a partition outside the topic's count is
// ignored.
func (r *Runtime[S]) LeadershipChanged(p int32) {
	if p < 0 || p >= r.cfg.Partitions {
		return
	}
	r.slotFor(p) // the error is the next request's to answer
}

// LoadLed starts loading every partition this node leads and has not
// loaded (LeadershipChanged for each): for the roles applied before the
// node's leadership notifications reached the coordinator, and to retry a
// load that failed.
//
// When Leaders can also name a local replica whatever its role
// (LocalReplicas, as the replica manager does), a partition whose slot
// already matches what this node holds is passed over without the
// errors slotFor would build: the transaction coordinator sweeps every
// second, and for the partitions it does not lead that was most of an
// idle node's allocations (issue 23).
func (r *Runtime[S]) LoadLed() {
	local, _ := r.cfg.Leaders.(LocalReplicas)
	for p := range r.cfg.Partitions {
		if local != nil && r.settled(local, p) {
			continue
		}
		r.LeadershipChanged(p)
	}
}

// LocalReplicas names a local replica of a partition whatever its role.
type LocalReplicas interface {
	Local(topic string, p int32) (*partition.Replica, bool)
}

// settled reports whether p's slot already is what slotFor would leave:
// none while this node does not lead p, or one for the replica and leader
// epoch it leads in now.
func (r *Runtime[S]) settled(local LocalReplicas, p int32) bool {
	rep, ok := local.Local(r.cfg.Topic, p)
	leads := ok && rep.IsLeader()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.mu.slots[p]
	if !leads {
		return s == nil
	}
	return s != nil && s.part.Replica == rep && s.part.Epoch == rep.LeaderEpoch()
}

// Shard returns the loaded shard of partition p: ErrLoadInProgress while
// it loads, an error wrapping ErrNotCoordinator when this node does not
// lead p, ErrClosed once closed. A shard returned may unload at any time
// after; the shard itself answers for what it holds then.
func (r *Runtime[S]) Shard(p int32) (S, error) {
	var zero S
	s, err := r.slotFor(p)
	if err != nil {
		return zero, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.mu.closed:
		return zero, ErrClosed
	case s.unloaded:
		return zero, fmt.Errorf("%w: %s-%d unloaded", ErrNotCoordinator, r.cfg.Topic, p)
	case !s.ready:
		return zero, ErrLoadInProgress
	}
	return s.shard, nil
}

// Loaded returns the loaded shard of p without starting a load; false
// when there is none.
func (r *Runtime[S]) Loaded(p int32) (S, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.mu.slots[p]; s != nil && s.ready && !s.unloaded {
		return s.shard, true
	}
	var zero S
	return zero, false
}

// Ready returns the loaded shards.
func (r *Runtime[S]) Ready() []S {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []S
	for _, s := range r.mu.slots {
		if s.ready && !s.unloaded {
			out = append(out, s.shard)
		}
	}
	return out
}

// Listable returns the loaded shards of every partition this node leads,
// or ErrLoadInProgress while one of them is not loaded: a partition whose
// replica leads here without a loaded shard of its leader epoch, or one
// the control plane names this node the leader of that its replica does
// not lead yet (a restarted node waits for its new leader epoch). A
// partial list would tell a client that what those partitions hold does
// not exist (Kafka answers COORDINATOR_LOAD_IN_PROGRESS too). It starts
// no load.
func (r *Runtime[S]) Listable() ([]S, error) {
	var out []S
	for p := range r.cfg.Partitions {
		rep, err := r.cfg.Leaders.Leader(r.cfg.Topic, p)
		if err != nil {
			if r.cfg.Cluster != nil {
				if b, ok := r.cfg.Cluster.PartitionLeader(r.cfg.Topic, p); ok && b.NodeID == r.cfg.NodeID {
					return nil, ErrLoadInProgress
				}
			}
			continue
		}
		r.mu.Lock()
		if r.mu.closed {
			r.mu.Unlock()
			return nil, ErrClosed
		}
		s := r.mu.slots[p]
		if s == nil || !s.ready || s.unloaded || s.part.Replica != rep || s.part.Epoch != rep.LeaderEpoch() {
			r.mu.Unlock()
			return nil, ErrLoadInProgress
		}
		out = append(out, s.shard)
		r.mu.Unlock()
	}
	return out, nil
}

// slotFor returns the slot of partition p, loaded or loading: when this
// node leads p and has no shard of the replica's current leader epoch, a
// new one starts loading (its predecessor unloads). When this node does
// not lead p, any shard of p unloads and the error wraps
// ErrNotCoordinator.
func (r *Runtime[S]) slotFor(p int32) (*slot[S], error) {
	rep, err := r.cfg.Leaders.Leader(r.cfg.Topic, p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, ErrClosed
	}
	s := r.mu.slots[p]
	if err != nil {
		if s != nil {
			r.unloadLocked(s)
		}
		return nil, fmt.Errorf("%w: %s-%d: %w", ErrNotCoordinator, r.cfg.Topic, p, err)
	}
	if s == nil || s.part.Replica != rep || s.part.Epoch != rep.LeaderEpoch() {
		if s != nil {
			r.unloadLocked(s)
		}
		part := &Partition{Topic: r.cfg.Topic, Index: p, Replica: rep, Epoch: rep.LeaderEpoch()}
		var cancel context.CancelFunc
		part.ctx, cancel = context.WithCancel(r.ctx)
		s = &slot[S]{part: part, cancel: cancel}
		s.shard = r.cfg.NewShard(part)
		r.mu.slots[p] = s
		r.Go(func() { r.load(s) })
		r.Go(func() { r.watch(s) })
	}
	return s, nil
}

// unloadLocked stops s and forgets it. REQUIRES: r.mu held.
func (r *Runtime[S]) unloadLocked(s *slot[S]) {
	if s.unloaded {
		return
	}
	s.unloaded = true
	s.shard.Unload()
	s.cancel()
	if r.mu.slots[s.part.Index] == s {
		delete(r.mu.slots, s.part.Index)
	}
}

// load reads s's partition and activates its shard, unless s was
// unloaded meanwhile. On failure the shard is dropped, so that the next
// request (or leadership change) tries again.
func (r *Runtime[S]) load(s *slot[S]) {
	select {
	case r.loadSlots <- struct{}{}:
	case <-s.part.ctx.Done():
		return
	}
	r.mu.Lock()
	gone := s.unloaded
	r.mu.Unlock()
	if gone {
		<-r.loadSlots
		return
	}
	start := time.Now()
	err := s.shard.Load()
	<-r.loadSlots
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.unloaded || r.mu.closed {
		return
	}
	if err != nil {
		r.log.Error("loading a coordinator partition failed", "topic", r.cfg.Topic, "partition", s.part.Index, "err", err)
		r.unloadLocked(s)
		return
	}
	s.shard.Activate()
	s.ready = true
	r.log.Debug("loaded a coordinator partition", "topic", r.cfg.Topic, "partition", s.part.Index, "epoch", s.part.Epoch, "took", time.Since(start))
}

// watch unloads s when its replica stops leading (a new leader epoch
// elsewhere), closes (the node stops, the partition moves away), or the
// runtime closes.
func (r *Runtime[S]) watch(s *slot[S]) {
	rep, ctx := s.part.Replica, s.part.ctx
	for {
		// The high watermark never passes MaxInt64: this returns on a role
		// or epoch change, close, ctx, or a shrunk ISR (which is no reason
		// to unload).
		err := rep.WaitCommitted(ctx, math.MaxInt64, s.part.Epoch)
		if ctx.Err() != nil || !errors.Is(err, partition.ErrNotEnoughReplicasAfterAppend) || rep.LeaderEpoch() != s.part.Epoch {
			break
		}
		select {
		case <-rep.HWChanged():
		case <-ctx.Done():
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unloadLocked(s)
}

// WaitCommitted waits, at most timeout, until the high watermark of p
// passes offset in p's leader epoch: the append-and-wait-for-commit of a
// coordinator's write. A lost leadership wraps ErrNotCoordinator; a write
// not replicated in time wraps ErrCoordinatorNotAvailable (the record may
// still commit, and the next coordinator loads it).
func WaitCommitted(ctx context.Context, p *Partition, offset int64, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := p.Replica.WaitCommitted(wctx, offset, p.Epoch)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, partition.ErrNotLeader), errors.Is(err, partition.ErrClosed):
		return fmt.Errorf("%w: %w", ErrNotCoordinator, err)
	}
	return fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, err)
}
