package replica

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/vfs"
)

// replicaKey names one partition.
type replicaKey struct {
	topic     string
	partition int32
}

// Metadata is what the manager reads from and writes to the control plane:
// the watched cache of topics, partition states and brokers, the ISR
// compare-and-set, and change events. *controlplane.Store implements it.
type Metadata interface {
	Topics() []controlplane.Topic
	Topic(name string) (controlplane.Topic, bool)
	Partitions(topic string) []controlplane.PartitionState
	Partition(topic string, p int32) (controlplane.PartitionState, bool)
	Brokers() []controlplane.Broker
	UpdatePartition(ctx context.Context, st controlplane.PartitionState) (controlplane.PartitionState, error)
	Subscribe(fn func(controlplane.Event)) (unsubscribe func())
}

// RemoteSegments lists a partition's remote segments, in any state, sorted
// by base offset (*controlplane.RemoteLog implements it).
type RemoteSegments interface {
	ListRemoteSegments(id controlplane.TopicID, p int32) []controlplane.RemoteSegment
}

// Config is what a Manager is built from.
type Config struct {
	NodeID  int32
	LogsDir string // one "<topic>-<partition>" directory per replica
	// TopicDefaults are the broker-wide topic config defaults.
	TopicDefaults map[string]string
	// WritebackBytes is each log's segment.Config.WritebackBytes (log_writeback_bytes).
	WritebackBytes int64
	// ProducerIDExpiration is each replica's partition.Options.ProducerIDExpiration
	// (producer_id_expiration).
	ProducerIDExpiration time.Duration
	// ReplicaLagTimeMax is replica.lag.time.max.ms (ISR shrink and expand).
	ReplicaLagTimeMax time.Duration
	// RecoveryThreads bounds the replicas Reconcile opens at once
	// (num.recovery.threads.per.data.dir); 0 means defaultOpenParallelism.
	RecoveryThreads int
	Fetch           FetchConfig
	// Dialer makes the fetchers' connections to leaders (TLS and SASL of
	// the inter-broker listener); nil dials plaintext.
	Dialer *interbroker.Dialer
	Logger *slog.Logger
	// OnISRChange, if set, is called after each committed ISR change (metrics).
	OnISRChange func(shrink, expand bool)
	// OnLeadership, if set, is called after a local replica's role or
	// leader epoch changed (and for each replica opened), with no lock of
	// the Manager held but possibly during a Reconcile: it must not block
	// nor call Reconcile. The coordinators load and unload their internal
	// topics' partitions from it.
	OnLeadership func(topic string, partition int32)
	// FS is the filesystem of the log dir: the partition directories the
	// manager makes and removes, their partition.metadata, and the
	// replicas' logs, producer snapshots and high watermark checkpoint
	// (partition.Options.FS). Default vfs.Default; tests fail a node's
	// fsyncs with vfs.WithErrors, or crash it on vfs.NewMem.
	FS vfs.FS
	// Incarnation is this node's registration's
	// (controlplane.Store.OwnIncarnation); "" skips the check it is for: a
	// partition record that names this node leader but carries another
	// incarnation was written for its previous process, and is not led
	// from until the controller has given it a new epoch.
	Incarnation string
}

// ConfigFrom takes a Manager's settings from a validated broker config; the
// caller sets Logger and OnISRChange.
func ConfigFrom(b config.Broker) Config {
	return Config{NodeID: b.NodeID, LogsDir: filepath.Join(b.DataDir, "logs"), TopicDefaults: b.TopicDefaults,
		WritebackBytes: b.LogWritebackBytes, ReplicaLagTimeMax: b.ReplicaLagTimeMax, Fetch: FetchConfigFrom(b),
		ProducerIDExpiration: b.ProducerIDExpiration, RecoveryThreads: b.NumRecoveryThreadsPerDataDir}
}

// Manager is the node's replica manager (Kafka's ReplicaManager): it owns
// the local replicas of this node, opens the partitions the control plane
// assigns here, closes and deletes those it takes away, applies the roles
// the control plane gives them, runs the follower fetchers, and answers
// partition.Leaders for the protocol handlers.
//
// Lock order: reconcileMu, then mu; a fetcher's locks (fetchers.mu, then
// each fetcher's mu) are taken with reconcileMu held (Reconcile installs
// the followed partitions) but never with mu held. mu is held only around
// map reads and writes, never across a replica's I/O.
type Manager struct {
	nodeID int32
	// incarnation is this process's registration's (Config.Incarnation).
	incarnation string
	logsDir     string
	fs          vfs.FS // Config.FS
	store       Metadata
	defaults    map[string]string // broker-wide topic config defaults
	topicCfgs   topicConfigs      // REQUIRES: reconcileMu held (topic_config.go)
	// writeback is each log's segment.Config.WritebackBytes (log_writeback_bytes).
	writeback int64
	// pidExpiration is each replica's partition.Options.ProducerIDExpiration.
	pidExpiration time.Duration
	// openParallelism bounds the replicas Reconcile opens at once.
	openParallelism int
	lagMax          time.Duration
	onISR           func(shrink, expand bool)
	onLeadership    func(topic string, partition int32) // Config.OnLeadership
	logger          *slog.Logger
	now             func() time.Time
	fetchers        *fetchers
	// hwCkpts is the log dir's high watermark checkpoint, shared by every
	// replica here (partition/hw_checkpoint.go): one file written every
	// interval, not one per partition.
	hwCkpts *partition.HWCheckpoints

	reconcileCh chan struct{} // a queued Reconcile for Run
	// dirty is what Run's next pass must reconcile: every partition (all)
	// or the partitions in keys, whose records changed (reconcileSome).
	dirty struct {
		sync.Mutex
		all  bool
		keys map[replicaKey]struct{}
	}
	// visits counts the partitions Run's passes visited (tests).
	visits atomic.Int64
	isrCh  chan struct{} // a queued ISR check for isrLoop (isrSoon)
	// reconcileMu serialises Reconcile: handlers and the event loop both call it.
	reconcileMu sync.Mutex
	// swept: the stray directories were removed (sweepStray, once).
	swept bool

	mu struct {
		sync.RWMutex
		replicas map[replicaKey]*partition.Replica
		topicIDs map[string]controlplane.TopicID
		closed   bool
		// steppedDown: the node's session certainly ended and the control
		// plane moved on without it (StepDownSilent); no replica leads.
		steppedDown bool
		// failed are the assigned replicas that failed to open, with the
		// topic id they were assigned under: offline until the node
		// restarts (Kafka's offline log dir), never opened again in this
		// run, so a half-readable directory is not retried on every
		// reconcile.
		failed map[replicaKey]failedOpen
		// newDirs are the open replicas whose directory this process
		// created (NewDir).
		newDirs map[replicaKey]bool
		// tailReads are the remote-tail reads of empty leaders, in
		// flight or done and not yet applied (leader_tail.go).
		tailReads map[replicaKey]*tailRead
	}
	// dirsCreated: open made a partition directory that Reconcile has
	// not fsynced the parent of yet.
	dirsCreated atomic.Bool
	// tailSem bounds the remote-tail reads in flight; tailWG counts their
	// goroutines; closing is closed by Close, which ends them.
	tailSem   chan struct{}
	tailWG    sync.WaitGroup
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a Manager with no replica open; Reconcile opens them, Run
// keeps them in line with the control plane.
func New(cfg Config, md Metadata) *Manager {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{nodeID: cfg.NodeID, incarnation: cfg.Incarnation, logsDir: cfg.LogsDir, store: md, defaults: cfg.TopicDefaults,
		writeback: cfg.WritebackBytes, pidExpiration: cfg.ProducerIDExpiration, lagMax: cfg.ReplicaLagTimeMax, onISR: cfg.OnISRChange, onLeadership: cfg.OnLeadership, logger: logger,
		now: time.Now, reconcileCh: make(chan struct{}, 1), isrCh: make(chan struct{}, 1), openParallelism: cfg.RecoveryThreads}
	if m.openParallelism <= 0 {
		m.openParallelism = defaultOpenParallelism
	}
	m.fs = cfg.FS
	if m.fs == nil {
		m.fs = vfs.Default
	}
	m.fetchers = newFetchers(cfg.NodeID, md, cfg.Fetch, cfg.Dialer, logger)
	m.hwCkpts = partition.OpenHWCheckpoints(cfg.LogsDir, partition.HWCheckpointOptions{Logger: logger, FS: m.fs})
	m.mu.replicas = map[replicaKey]*partition.Replica{}
	m.mu.topicIDs = map[string]controlplane.TopicID{}
	m.mu.failed = map[replicaKey]failedOpen{}
	m.mu.newDirs = map[replicaKey]bool{}
	m.mu.tailReads = map[replicaKey]*tailRead{}
	m.tailSem = make(chan struct{}, leaderTailReads)
	m.closing = make(chan struct{})
	return m
}

// Leader implements partition.Leaders.
func (r *Manager) Leader(topic string, p int32) (*partition.Replica, error) {
	r.mu.RLock()
	rep, ok := r.mu.replicas[replicaKey{topic, p}]
	r.mu.RUnlock()
	if ok && !rep.IsLeader() {
		leader := int32(-1)
		if st, known := r.store.Partition(topic, p); known {
			leader = st.Leader
		}
		return nil, fmt.Errorf("%w: %s-%d is led by %d", partition.ErrNotLeader, topic, p, leader)
	}
	if !ok {
		if st, known := r.store.Partition(topic, p); known {
			// Led elsewhere, or led here and not open yet (a large
			// topic's replicas open in the background: admin's
			// reconcile): NOT_LEADER_OR_FOLLOWER, which clients retry
			// after refreshing metadata, as Kafka answers for a partition
			// its metadata knows and its replica manager does not host.
			// UNKNOWN_TOPIC_OR_PARTITION is retried only a few times
			// (franz-go fails a produce after four).
			if st.Leader == r.nodeID {
				return nil, fmt.Errorf("%w: %s-%d is not open on node %d yet", partition.ErrNotLeader, topic, p, r.nodeID)
			}
			return nil, fmt.Errorf("%w: %s-%d is led by %d", partition.ErrNotLeader, topic, p, st.Leader)
		}
		return nil, fmt.Errorf("%w: %s-%d", partition.ErrUnknownTopicOrPartition, topic, p)
	}
	return rep, nil
}

// Assigned returns this node's open replica of topic-p, leader or follower
// (a follower serves consumers that fetch from it, KIP-392), while the
// control plane still assigns it to this node (a replica moved away is
// kept open only until the reconcile closes it, and serves no one). The
// error wraps ErrNotLeader when the partition has no replica here.
func (r *Manager) Assigned(topic string, p int32) (*partition.Replica, error) {
	r.mu.RLock()
	rep, ok := r.mu.replicas[replicaKey{topic, p}]
	r.mu.RUnlock()
	st, known := r.store.Partition(topic, p)
	if !ok || !known || !slices.Contains(st.Replicas, r.nodeID) {
		return nil, fmt.Errorf("%w: %s-%d has no replica on node %d", partition.ErrNotLeader, topic, p, r.nodeID)
	}
	return rep, nil
}

// NewDir reports whether this process created the directory of its open
// replica of topic-p: there was none when it opened it (a new or wiped
// disk, or the data of an older topic of the same name removed), so the
// replica holds nothing this node held before. A node that started
// uncleanly reports it (controlplane.ReplicaLog.NewDisk).
func (r *Manager) NewDir(topic string, p int32) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.mu.newDirs[replicaKey{topic, p}]
}

// All returns the open replicas (for retention, flushing, status).
func (r *Manager) All() []*partition.Replica {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*partition.Replica, 0, len(r.mu.replicas))
	for _, rep := range r.mu.replicas {
		out = append(out, rep)
	}
	return out
}

// TopicConfig resolves a topic's effective config.
func (r *Manager) TopicConfig(t controlplane.Topic) *config.TopicConfig {
	return config.ResolveTopic(t.Configs, r.defaults)
}

func (r *Manager) dirFor(topic string, p int32) string {
	return filepath.Join(r.logsDir, fmt.Sprintf("%s-%d", topic, p))
}

// partition.metadata records the topic id a directory belongs to, as Kafka
// does, so that a topic re-created under the same name never sees old data.
const partitionMetadataFile = "partition.metadata"

func readTopicID(fsys vfs.FS, dir string) (string, bool) {
	b, err := fsys.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// writeTopicID writes partition.metadata as Kafka's PartitionMetadataFile
// does: a temporary file, fsynced, renamed over it, and the directory
// fsynced, so that after a power loss it names the topic id or is absent
// with the directory's other new entries, never empty or torn beside data
// that survived (which a re-created topic of the same name would then
// take for its own).
func writeTopicID(fsys vfs.FS, dir, id string) error {
	return segment.WriteFileAtomic(fsys, dir, partitionMetadataFile, []byte("version: 0\ntopic_id: "+id+"\n"))
}

// Reconcile makes the open replicas match the control plane: it opens the
// partitions assigned to this node and closes (and deletes) the others. It is
// called at start and on every control-plane event; it is idempotent.
func (r *Manager) Reconcile() error {
	r.reconcileMu.Lock()
	defer r.reconcileMu.Unlock()
	want := map[replicaKey]controlplane.PartitionState{}
	topics := map[string]controlplane.Topic{}
	for _, t := range r.store.Topics() {
		topics[t.Name] = t
		for _, st := range r.store.Partitions(t.Name) {
			if slices.Contains(st.Replicas, r.nodeID) {
				want[replicaKey{t.Name, st.Partition}] = st
			}
		}
	}
	if r.topicCfgs == nil {
		r.topicCfgs = topicConfigs{}
	}
	r.topicCfgs.keep(topics)
	var errs []error
	// Close replicas no longer assigned here, or whose topic was re-created.
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return nil
	}
	var drop []*partition.Replica
	var dropDirs []string
	for k, rep := range r.mu.replicas {
		t, ok := topics[k.topic]
		if _, assigned := want[k]; !assigned || !ok || t.ID != r.mu.topicIDs[k.topic] {
			drop = append(drop, rep)
			dropDirs = append(dropDirs, r.dirFor(k.topic, k.partition))
			delete(r.mu.replicas, k)
			delete(r.mu.newDirs, k)
			delete(r.mu.tailReads, k)
		}
	}
	r.mu.Unlock()
	for i, rep := range drop {
		if err := rep.Close(); err != nil {
			errs = append(errs, err)
		}
		r.hwCkpts.Forget(rep.Topic(), rep.Partition())
		if err := vfs.RemoveAll(r.fs, dropDirs[i]); err != nil {
			errs = append(errs, err)
		}
		r.logger.Info("replica removed", "topic", rep.Topic(), "partition", rep.Partition())
	}
	if !r.swept {
		if err := r.sweepStray(topics, want); err != nil {
			errs = append(errs, err)
		} else {
			r.swept = true
		}
	}
	r.mu.Lock()
	for k, f := range r.mu.failed {
		if _, assigned := want[k]; !assigned || topics[k.topic].ID != f.topicID {
			delete(r.mu.failed, k) // unassigned, or the topic was re-created
		}
	}
	r.mu.Unlock()
	var toOpen []replicaKey
	for k, st := range want {
		r.mu.RLock()
		existing, open := r.mu.replicas[k]
		_, failed := r.mu.failed[k]
		r.mu.RUnlock()
		t := topics[k.topic]
		if open {
			if tc := r.topicCfgs.resolve(r, t); existing.Config() != tc {
				existing.SetConfig(tc)
			}
			r.applyRole(existing, st, false)
			continue
		}
		if failed {
			continue
		}
		toOpen = append(toOpen, k)
	}
	r.openAll(toOpen, topics, want)
	if r.dirsCreated.Swap(false) {
		// The new partition directories' entries, with one fsync of their
		// parent for all of them (Kafka flushes the parent directory of a
		// log it creates). Each log makes its own files durable at its
		// first flush.
		if err := vfs.SyncDir(r.fs, r.logsDir); err != nil {
			errs = append(errs, fmt.Errorf("syncing %s: %w", r.logsDir, err))
		}
	}
	follow := map[replicaKey]followed{}
	r.mu.RLock()
	down := r.mu.steppedDown
	for k, rep := range r.mu.replicas {
		if rep.LogErr() != nil {
			continue // an offline log follows no leader
		}
		if st, ok := want[k]; ok && !down && st.Leader >= 0 && st.Leader != r.nodeID {
			follow[k] = followed{rep: rep, leader: st.Leader, epoch: st.LeaderEpoch}
		}
	}
	r.mu.RUnlock()
	r.fetchers.Update(follow)
	return errors.Join(errs...)
}

// defaultOpenParallelism bounds the replicas Reconcile opens at once when
// Config.RecoveryThreads is not set (num.recovery.threads.per.data.dir):
// opening is disk reads and fsyncs, so a node holding many partitions
// recovers them side by side instead of one after another, without one
// goroutine per partition.
const defaultOpenParallelism = 8

// openAll opens the replicas keys name, at most r.openParallelism at a time,
// and returns when every one is open or failed. A replica that fails to open
// is offline, not the node: it serves its other replicas, reports this one
// (Offline) and leads or follows it no more in this run.
//
// A new replica (its directory made now: a topic's creation, a
// reassignment) that follows starts fetching soon after it opens
// (earlyFollow), not when the last of thousands has: it is in its
// partition's ISR from the start, and its leader drops it after
// replica.lag.time.max.ms without a fetch. Reconcile's final
// fetchers.Update then finds it followed. Replicas recovered from disk (a
// restart) start fetching together after the last has opened, as Kafka's
// log loading precedes its fetchers: fetching while the others recovered
// made a 10,000-partition node back in every ISR after 28-46 s of its
// restart, against 17-23 s (BenchmarkISRRejoin, four runs each).
// REQUIRES: reconcileMu held.
func (r *Manager) openAll(keys []replicaKey, topics map[string]controlplane.Topic, want map[replicaKey]controlplane.PartitionState) {
	if len(keys) == 0 {
		return // most Reconciles: no timer to start
	}
	early := r.startEarlyFollow()
	defer early.stop()
	forEachBounded(keys, r.openParallelism, func(k replicaKey) {
		t, st := topics[k.topic], want[k]
		if err := r.open(t, st); err != nil {
			r.logger.Error("replica failed to open; offline until restart", "topic", t.Name, "partition", st.Partition, "err", err)
			r.mu.Lock()
			r.mu.failed[k] = failedOpen{topicID: t.ID, err: err}
			r.mu.Unlock()
			return
		}
		if st.Leader < 0 || st.Leader == r.nodeID {
			return
		}
		r.mu.RLock()
		rep, open := r.mu.replicas[k]
		created := r.mu.newDirs[k]
		down := r.mu.steppedDown
		r.mu.RUnlock()
		if open && created && !down && rep.LogErr() == nil {
			early.add(k, followed{rep: rep, leader: st.Leader, epoch: st.LeaderEpoch})
		}
	})
}

// earlyFollowEvery is how often openAll hands the followers opened since
// to the fetchers, and earlyFollowBatch how many make it do so at once.
const (
	earlyFollowEvery = 250 * time.Millisecond
	earlyFollowBatch = 512
)

// earlyFollow collects the followers openAll has opened and installs them
// in the fetchers (fetchers.Patch) in batches: every earlyFollowEvery, at
// earlyFollowBatch, and at stop. Its timer's Patch calls run inside
// openAll's caller's hold of reconcileMu (stop waits for them), so the lock
// order stands; a step-down meanwhile is undone by Reconcile's Update.
type earlyFollow struct {
	f    *fetchers
	mu   sync.Mutex
	next map[replicaKey]followed
	quit chan struct{}
	done chan struct{}
}

// startEarlyFollow starts the batches' timer; stop ends it and installs
// the last batch.
func (r *Manager) startEarlyFollow() *earlyFollow {
	e := &earlyFollow{f: r.fetchers, next: map[replicaKey]followed{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		t := time.NewTicker(earlyFollowEvery)
		defer t.Stop()
		for {
			select {
			case <-e.quit:
				return
			case <-t.C:
				e.flush()
			}
		}
	}()
	return e
}

func (e *earlyFollow) add(k replicaKey, f followed) {
	e.mu.Lock()
	e.next[k] = f
	full := len(e.next) >= earlyFollowBatch
	e.mu.Unlock()
	if full {
		e.flush()
	}
}

func (e *earlyFollow) flush() {
	e.mu.Lock()
	batch := e.next
	e.next = map[replicaKey]followed{}
	e.mu.Unlock()
	if len(batch) > 0 {
		e.f.Patch(batch, nil)
	}
}

func (e *earlyFollow) stop() {
	close(e.quit)
	<-e.done
	e.flush()
}

// forEachBounded calls fn for every item, from at most limit goroutines at
// once, and returns when every call has returned.
func forEachBounded[T any](items []T, limit int, fn func(T)) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range min(max(limit, 1), len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				fn(it)
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}

// open opens one replica and applies its role. Reconcile calls it from
// several goroutines at once (openAll), each for another partition.
func (r *Manager) open(t controlplane.Topic, st controlplane.PartitionState) error {
	dir := r.dirFor(t.Name, st.Partition)
	id := t.ID.String()
	old, hasID := readTopicID(r.fs, dir)
	if hasID && old != id {
		r.logger.Info("removing data of an older topic with the same name", "dir", dir, "old_topic_id", old, "topic_id", id)
		if err := vfs.RemoveAll(r.fs, dir); err != nil {
			return err
		}
	}
	_, statErr := r.fs.Stat(dir)
	newDir := errors.Is(statErr, fs.ErrNotExist)
	if newDir {
		// A checkpoint entry of a directory since lost is no bound on this one.
		r.hwCkpts.Forget(t.Name, st.Partition)
	}
	if err := r.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if newDir {
		r.dirsCreated.Store(true)
	}
	if !hasID || old != id { // written once per directory: no fsyncs per open
		if err := writeTopicID(r.fs, dir, id); err != nil {
			return err
		}
	}
	rep, err := partition.Open(partition.Options{
		Dir: dir, Topic: t.Name, Partition: st.Partition, Config: r.TopicConfig(t),
		LeaderEpoch: st.LeaderEpoch, Now: r.now, Logger: r.logger, WritebackBytes: r.writeback,
		HWCheckpoints: r.hwCkpts, TopicID: t.ID,
		OnISRExpandable: r.isrSoon, ProducerIDExpiration: r.pidExpiration, FS: r.fs,
	})
	if err != nil {
		return fmt.Errorf("opening %s-%d: %w", t.Name, st.Partition, err)
	}
	// The replica opens as a follower with its checkpointed high
	// watermark; it becomes visible to requests only once its role is
	// applied (issue 15 item 4).
	r.applyRole(rep, st, true)
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return rep.Close()
	}
	if _, dup := r.mu.replicas[replicaKey{t.Name, st.Partition}]; dup {
		// Reconcile is serialised, so this is a broken invariant: two logs on one directory.
		panic(fmt.Sprintf("replica: replica %s-%d opened twice", t.Name, st.Partition))
	}
	r.mu.replicas[replicaKey{t.Name, st.Partition}] = rep
	r.mu.newDirs[replicaKey{t.Name, st.Partition}] = newDir
	r.mu.topicIDs[t.Name] = t.ID
	down := r.mu.steppedDown
	r.mu.Unlock()
	if down && rep.IsLeader() {
		// StepDown ran between applyRole and the insertion, and did not
		// see this replica.
		rep.SetLeadership(false, rep.LeaderEpoch())
	}
	if r.onLeadership != nil {
		r.onLeadership(t.Name, st.Partition) // now that Leader finds it
	}
	return nil
}

// applyRole makes a replica leader or follower as the partition state says,
// and logs each change (tests check from these lines that no two nodes lead
// one partition in the same epoch).
func (r *Manager) applyRole(rep *partition.Replica, st controlplane.PartitionState, opened bool) {
	r.mu.RLock()
	down := r.mu.steppedDown
	r.mu.RUnlock()
	leader := st.Leader == r.nodeID && !down
	if leader && r.previousProcess(st) {
		// The record was written for this node's previous process: its
		// epoch's log may be one this process does not have (a wiped
		// disk), and appending in it would give one epoch two histories
		// (followers truncate to what OffsetForLeaderEpoch answers). The
		// controller fences a re-registered leader with a new epoch
		// (controlplane.ReconcilePartition); lead from that one.
		leader = false
		if rep.IsLeader() || opened {
			r.logger.Info("not leading: the partition record names this node's previous process", "topic", st.Topic,
				"partition", st.Partition, "leader_epoch", st.LeaderEpoch)
		}
	}
	if leader && !r.prepareLeader(rep, st) { // leader_tail.go
		leader = false
	}
	rep.SetAssignmentAt(r.nodeID, st.Replicas, st.ISR, st.PartitionEpoch)
	if rep.SetLeadership(leader, st.LeaderEpoch) || opened {
		role := "follower"
		if leader {
			role = "leader"
		}
		r.logger.Info("became "+role, "topic", st.Topic, "partition", st.Partition, "leader_epoch", st.LeaderEpoch, "leader", st.Leader)
		if r.onLeadership != nil && !opened {
			r.onLeadership(st.Topic, st.Partition) // open tells once the replica is in the map
		}
	}
}

// previousProcess reports whether st, which names this node leader, was
// stamped by the controller with another incarnation than this process's.
func (r *Manager) previousProcess(st controlplane.PartitionState) bool {
	return r.incarnation != "" && st.LeaderIncarnation != "" && st.LeaderIncarnation != r.incarnation
}

// failedOpen is an assigned replica that failed to open.
type failedOpen struct {
	topicID controlplane.TopicID
	err     error
}

// OfflineReplica is a local replica this node cannot serve: it failed to
// open, or its log went offline after an I/O error (partition.Replica.LogErr).
type OfflineReplica struct {
	Topic     string
	Partition int32
	TopicID   controlplane.TopicID
	Err       error
}

// Offline lists the replicas assigned here that this node cannot serve,
// sorted by topic and partition. The node reports them to the control
// plane, which counts the node as dead for them (controlplane.LiveFor), and
// Reconcile runs no fetcher for them.
func (r *Manager) Offline() []OfflineReplica {
	r.mu.RLock()
	var out []OfflineReplica
	for k, f := range r.mu.failed {
		out = append(out, OfflineReplica{Topic: k.topic, Partition: k.partition, TopicID: f.topicID, Err: f.err})
	}
	for k, rep := range r.mu.replicas {
		if !segment.AnyFailed() {
			break // no log of this process failed: none to ask
		}
		if err := rep.LogErr(); err != nil {
			out = append(out, OfflineReplica{Topic: k.topic, Partition: k.partition, TopicID: r.mu.topicIDs[k.topic], Err: err})
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b OfflineReplica) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// Resume lets Reconcile hand leadership back after StepDownSilent.
func (r *Manager) Resume() {
	r.mu.Lock()
	r.mu.steppedDown = false
	r.mu.Unlock()
}

// StopFetchers stops every follower fetcher; Reconcile starts none after
// it. The node calls it after its loops stopped and before the cold tier
// closes.
func (r *Manager) StopFetchers() { r.fetchers.Close() }

// Close stops the fetchers (if StopFetchers has not) and closes every
// replica (flush, producer snapshot, clean marker). Call it once Run has
// returned.
func (r *Manager) Close() error {
	r.closeOnce.Do(func() { close(r.closing) })
	r.tailWG.Wait()
	r.fetchers.Close()
	r.mu.Lock()
	r.mu.closed = true
	reps := r.mu.replicas
	r.mu.replicas = map[replicaKey]*partition.Replica{}
	r.mu.Unlock()
	var errs []error
	for _, rep := range reps {
		errs = append(errs, rep.Close())
	}
	// Every replica's last high watermark, in one write.
	if err := r.hwCkpts.WriteNow(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckpointHighWatermarks writes the high watermark checkpoint if it is
// due (the node calls it periodically) or, with now, at once.
func (r *Manager) CheckpointHighWatermarks(now bool) error {
	if now {
		return r.hwCkpts.WriteNow()
	}
	return r.hwCkpts.MaybeWrite()
}

// Local returns the local replica of a partition whatever its role (tools
// and tests).
func (r *Manager) Local(topic string, p int32) (*partition.Replica, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rep, ok := r.mu.replicas[replicaKey{topic, p}]
	return rep, ok
}

// Run keeps the replicas in line with the control plane until ctx ends: it
// reconciles on every topic, partition and broker event, and runs the
// leader's ISR checks (isrLoop). The node starts it once, after the first
// Reconcile.
//
// Broker events matter to followers: a fetcher starts only once its leader
// is in the broker cache, and the partition state naming a leader can reach
// this node before the leader's registration does (they are different
// buckets, watched apart), so the leader's BrokerUp must reconcile too
// (issue 15 item 5: the follower never fetched).
func (r *Manager) Run(ctx context.Context) {
	unsubscribe := r.store.Subscribe(func(ev controlplane.Event) {
		switch ev.Kind {
		case controlplane.PartitionChanged:
			r.reconcilePartitionSoon(replicaKey{ev.Partition.Topic, ev.Partition.Partition})
		case controlplane.TopicCreated, controlplane.TopicChanged, controlplane.TopicDeleted,
			controlplane.PartitionDeleted, controlplane.BrokerUp, controlplane.BrokerDown:
			r.reconcileSoon()
		}
	})
	defer unsubscribe()
	// A change that landed between the first Reconcile and Subscribe (the
	// node's own registration moves leaders) raised no event here:
	// reconcile once more now that every later change will.
	r.reconcileSoon()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.isrLoop(ctx)
	}()
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.reconcileCh:
			if d := testReconcileDelay(); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
			all, keys := r.takeDirty()
			switch {
			case all:
				r.visits.Add(int64(r.reconcileOrLogCount()))
			case len(keys) > 0:
				r.visits.Add(int64(len(keys)))
				if err := r.reconcileSome(keys); err != nil {
					r.logger.Error("reconciling replicas", "err", err)
				}
			}
		}
	}
}

// ReconcileDelayEnv names a fault-injection hook for process tests: a
// duration (time.ParseDuration) by which Run delays every queued
// Reconcile, so that a test can show what a node does while its replicas
// lag the control plane (internal/replicationtest's maximal ISR test).
// Unset in production.
const ReconcileDelayEnv = "SHALE_TEST_RECONCILE_DELAY"

// testReconcileDelay is ReconcileDelayEnv's value, 0 when unset or invalid.
func testReconcileDelay() time.Duration {
	d, err := time.ParseDuration(os.Getenv(ReconcileDelayEnv))
	if err != nil {
		return 0
	}
	return d
}

// ReconcileOrLog is Reconcile with its error logged (callers that act on a
// change they just committed and cannot do more about a failure).
func (r *Manager) ReconcileOrLog() { r.reconcileOrLogCount() }

// reconcileOrLogCount is ReconcileOrLog returning how many partitions the
// pass visited (the replicas open here after it).
func (r *Manager) reconcileOrLogCount() int {
	if err := r.Reconcile(); err != nil {
		r.logger.Error("reconciling replicas", "err", err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.mu.replicas)
}

// reconcileSoon queues a full Reconcile for Run; queued ones coalesce.
func (r *Manager) reconcileSoon() {
	r.dirty.Lock()
	r.dirty.all = true
	r.dirty.Unlock()
	r.queueReconcile()
}

// reconcilePartitionSoon queues a pass of Run over partition k alone
// (reconcileSome), coalesced with the others queued.
func (r *Manager) reconcilePartitionSoon(k replicaKey) {
	r.dirty.Lock()
	if !r.dirty.all {
		if r.dirty.keys == nil {
			r.dirty.keys = map[replicaKey]struct{}{}
		}
		r.dirty.keys[k] = struct{}{}
	}
	r.dirty.Unlock()
	r.queueReconcile()
}

func (r *Manager) queueReconcile() {
	select {
	case r.reconcileCh <- struct{}{}:
	default:
	}
}

// takeDirty returns and clears what the next pass must reconcile.
func (r *Manager) takeDirty() (all bool, keys []replicaKey) {
	r.dirty.Lock()
	defer r.dirty.Unlock()
	all = r.dirty.all
	if !all {
		keys = slices.Collect(maps.Keys(r.dirty.keys))
	}
	r.dirty.all, r.dirty.keys = false, nil
	return all, keys
}

// reconcileSome does Reconcile's work for the partitions in keys alone,
// when each is a replica open here whose record still names this node and
// whose topic is the one it was opened under: a new role, leader epoch,
// ISR or config is applied, and its fetcher entry changed. Anything else
// (a replica to open, close or re-create, a record or topic gone, the node
// stepped down, an offline log) makes it a full Reconcile. A node that takes
// over thousands of leaderships after a broker loss gets them as thousands
// of PartitionChanged events; a full pass after each batch visited every
// partition (30-40% of a surviving node's CPU at 10,000 partitions).
func (r *Manager) reconcileSome(keys []replicaKey) error {
	type change struct {
		k   replicaKey
		st  controlplane.PartitionState
		t   controlplane.Topic
		rep *partition.Replica
	}
	// The records are read under reconcileMu, as Reconcile reads them, so
	// that a full pass in between cannot be undone by older states.
	r.reconcileMu.Lock()
	changes := make([]change, 0, len(keys))
	for _, k := range keys {
		st, ok := r.store.Partition(k.topic, k.partition)
		t, tok := r.store.Topic(k.topic)
		if !ok || !tok || st.TopicID != t.ID || !slices.Contains(st.Replicas, r.nodeID) {
			r.reconcileMu.Unlock()
			return r.Reconcile()
		}
		changes = append(changes, change{k: k, st: st, t: t})
	}
	r.mu.RLock()
	if r.mu.closed {
		r.mu.RUnlock()
		r.reconcileMu.Unlock()
		return nil
	}
	full := r.mu.steppedDown
	for i := range changes {
		c := &changes[i]
		rep, open := r.mu.replicas[c.k]
		_, failed := r.mu.failed[c.k]
		if !open || failed || r.mu.topicIDs[c.k.topic] != c.t.ID || rep.LogErr() != nil {
			full = true
			break
		}
		c.rep = rep
	}
	r.mu.RUnlock()
	if full {
		r.reconcileMu.Unlock()
		return r.Reconcile()
	}
	defer r.reconcileMu.Unlock()
	follow := make(map[replicaKey]followed, len(changes))
	var unfollow []replicaKey
	for _, c := range changes {
		if tc := r.topicCfgs.resolve(r, c.t); c.rep.Config() != tc {
			c.rep.SetConfig(tc)
		}
		r.applyRole(c.rep, c.st, false)
		if c.st.Leader >= 0 && c.st.Leader != r.nodeID {
			follow[c.k] = followed{rep: c.rep, leader: c.st.Leader, epoch: c.st.LeaderEpoch}
		} else {
			unfollow = append(unfollow, c.k)
		}
	}
	r.fetchers.Patch(follow, unfollow)
	return nil
}
