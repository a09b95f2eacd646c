package tiering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
)

// Config configures a Manager.
type Config struct {
	NodeID int32
	Bucket objstore.Bucket
	Store  *controlplane.Store
	Meta   *controlplane.RemoteLog
	// Replicas returns this node's open replicas; the manager tiers those
	// this node leads whose topic has remote.storage.enable=true.
	Replicas func() []*partition.Replica
	// Prefix is the key prefix of every object (s3_prefix).
	Prefix string
	// Interval between passes. Default 5s.
	Interval time.Duration
	// Workers bounds the partitions worked on at once. Default 2.
	Workers int
	// OrphanGrace: an object not referenced by committed metadata, or a
	// CopyStarted record, is removed once older than this. Default 5m.
	OrphanGrace time.Duration
	// ReconcileEvery: the bucket is listed to find orphans every this many
	// passes (LIST requests cost). Default 12.
	ReconcileEvery int
	// IsController: this node cleans up the remote data of deleted topics.
	// Default: never.
	IsController func() bool
	// DataDir and DiskHighWatermark: when the filesystem holding DataDir is
	// fuller than this fraction, produce is refused (partition.ErrDiskFull).
	// Checked every Interval by the loop, apart from the passes (RunOnce
	// does not check). 0 disables the check.
	DataDir           string
	DiskHighWatermark float64
	// Location names the bucket for the brokers' cold-tier check
	// ("s3://<bucket>", or the filesystem bucket's path), and SharedBucket
	// says whether every broker can reach it (S3). An empty Location turns
	// the check off (tools and tests that run one manager). See Register.
	Location     string
	SharedBucket bool
	// TopicDefaults are the broker-wide topic config defaults: a deleted
	// topic's remote data is quarantined for their remote.delete.grace.ms.
	TopicDefaults map[string]string
	Now           func() time.Time
	Logger        *slog.Logger
}

// Stats are the manager's counters since it started.
type Stats struct {
	SegmentsUploaded      uint64
	BytesUploaded         uint64
	UploadFailures        uint64 // uploads that failed (bucket down, fenced, ...)
	RemoteSegmentsDeleted uint64 // by total retention
	OrphansDeleted        uint64 // objects and abandoned records removed by the reconciler
	Passes                uint64
	DiskFull              bool
	// ColdTierConflict: the brokers sharing the metadata do not share one
	// bucket, so this node does not tier (ErrColdTierNotShared).
	ColdTierConflict bool
	// Quarantined, QuarantinePurged and QuarantineRestored count the
	// remote deletes put in quarantine (segments and orphan objects), the
	// entries purged and the segments restored.
	Quarantined, QuarantinePurged, QuarantineRestored uint64
	// SharedObjectsKept counts the objects a delete left in the bucket
	// because another topic's records still list them (a fork's).
	SharedObjectsKept uint64
	// BucketUnreachable: the last bucket request of an upload or remote
	// delete failed (ErrBucket); uploads wait and local segments are kept.
	BucketUnreachable bool
	// PassedOver counts the partitions passes did not visit: nothing had
	// changed since a visit that did all it had to (quiet.go); WalksSkipped
	// the passes that did not look at any partition (skipWalk).
	PassedOver, WalksSkipped uint64
}

type counters struct {
	segmentsUploaded, bytesUploaded, uploadFailures, remoteDeleted, orphansDeleted, passes atomic.Uint64
	quarantined, purged, restored, sharedKept, passedOver, walksSkipped                    atomic.Uint64
	diskFull, coldTierConflict                                                             atomic.Bool
}

// bucketHealth is whether the bucket answers the manager's requests, for
// one log line per outage rather than one per pass.
type bucketHealth struct {
	sync.Mutex
	down  bool
	since time.Time
}

// Manager is one node's tiering loop. One goroutine, started by Start and
// stopped by Close, runs a pass every Interval; a pass works on up to
// Workers partitions at once. RunOnce runs a pass on the caller's goroutine
// (tests, tools); it must not run concurrently with the loop on the same
// partitions, so use one or the other.
type Manager struct {
	cfg    Config
	bucket objstore.Bucket
	meta   *controlplane.RemoteLog
	log    *slog.Logger
	now    func() time.Time
	stats  counters

	passMu sync.Mutex // serialises passes
	quiet  quietSet   // the partitions' settled visits (quiet.go)

	health bucketHealth

	testDiskCapacity int64 // DiskCapacityEnv, 0 unset

	tierMu       sync.Mutex
	tierConflict string // the last cold-tier conflict logged ("" none)

	startOnce, closeOnce sync.Once
	cancel               context.CancelFunc
	done                 chan struct{}
}

// New validates cfg and returns a stopped Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Bucket == nil || cfg.Store == nil || cfg.Meta == nil || cfg.Replicas == nil {
		return nil, errors.New("tiering: Config needs Bucket, Store, Meta and Replicas")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.OrphanGrace == 0 {
		cfg.OrphanGrace = 5 * time.Minute
	}
	if cfg.ReconcileEvery <= 0 {
		cfg.ReconcileEvery = 12
	}
	if cfg.IsController == nil {
		cfg.IsController = func() bool { return false }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DiskHighWatermark < 0 || cfg.DiskHighWatermark > 1 {
		return nil, fmt.Errorf("tiering: DiskHighWatermark %v: want 0..1", cfg.DiskHighWatermark)
	}
	return &Manager{cfg: cfg, bucket: cfg.Bucket, meta: cfg.Meta, now: cfg.Now, testDiskCapacity: testDiskCapacity(),
		log: cfg.Logger.With("component", "tiering"), done: make(chan struct{})}, nil
}

// Start starts the loop. Idempotent.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		m.cancel = cancel
		go m.loop(ctx)
	})
}

// Close stops the loop and waits for a pass in progress (its bucket calls
// see a canceled context). Idempotent. It closes neither the bucket nor
// the metadata.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		if m.cancel == nil {
			close(m.done)
			return
		}
		m.cancel()
		<-m.done
	})
}

func (m *Manager) loop(ctx context.Context) {
	var disk sync.WaitGroup
	disk.Go(func() { m.diskLoop(ctx) })
	defer close(m.done)
	defer disk.Wait()
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.pass(ctx, reconcilePhased)
		}
	}
}

// diskLoop checks the disk high-water mark every Interval, apart from the
// passes: a pass that waits out the retries of an unreachable bucket must
// not delay the refusal of produce while the disk fills.
func (m *Manager) diskLoop(ctx context.Context) {
	if m.cfg.DiskHighWatermark <= 0 || m.cfg.DataDir == "" {
		return
	}
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.checkDisk(m.cfg.Replicas)
		}
	}
}

// RunOnce runs one pass now: uploads, remote retention, local retention, and
// with reconcile the bucket listing and orphan removal.
func (m *Manager) RunOnce(ctx context.Context, reconcile bool) {
	if reconcile {
		m.pass(ctx, reconcileAll)
		return
	}
	m.pass(ctx, reconcileNone)
}

// reconcileMode is which partitions a pass reconciles with the bucket.
type reconcileMode int

const (
	reconcileNone   reconcileMode = iota
	reconcileAll                  // every led partition, and the controller's cleanups
	reconcilePhased               // the loop's: each partition in its phase (reconcileDue)
)

// Stats returns the counters.
func (m *Manager) Stats() Stats {
	return Stats{SegmentsUploaded: m.stats.segmentsUploaded.Load(), BytesUploaded: m.stats.bytesUploaded.Load(),
		UploadFailures: m.stats.uploadFailures.Load(), RemoteSegmentsDeleted: m.stats.remoteDeleted.Load(),
		OrphansDeleted: m.stats.orphansDeleted.Load(), Passes: m.stats.passes.Load(), DiskFull: m.stats.diskFull.Load(),
		ColdTierConflict: m.stats.coldTierConflict.Load(), BucketUnreachable: m.bucketDown(),
		Quarantined: m.stats.quarantined.Load(), QuarantinePurged: m.stats.purged.Load(), QuarantineRestored: m.stats.restored.Load(),
		SharedObjectsKept: m.stats.sharedKept.Load(), PassedOver: m.stats.passedOver.Load(),
		WalksSkipped: m.stats.walksSkipped.Load()}
}

// bucketFailed records a failed upload or remote delete. For a bucket
// failure (ErrBucket) it marks the bucket unreachable, logging at ERROR
// when it was not already, and returns whether it already was (the caller
// then logs its own failure at debug only). Other errors change nothing and
// return false.
func (m *Manager) bucketFailed(err error) (known bool) {
	if !errors.Is(err, ErrBucket) {
		return false
	}
	m.health.Lock()
	defer m.health.Unlock()
	if m.health.down {
		return true
	}
	m.health.down, m.health.since = true, m.now()
	m.log.Error("bucket unreachable: uploads and remote deletes wait, local segments are kept", "err", err)
	return false
}

// bucketOK records a bucket request that succeeded, logging the end of an
// outage.
func (m *Manager) bucketOK() {
	m.health.Lock()
	defer m.health.Unlock()
	if m.health.down {
		m.log.Info("bucket reachable again", "unreachable_for", m.now().Sub(m.health.since).Round(time.Millisecond))
		m.health.down = false
	}
}

func (m *Manager) bucketDown() bool {
	m.health.Lock()
	defer m.health.Unlock()
	return m.health.down
}

// LogStartOffset returns the log start (remote or local) of a local replica
// of the partition, for the fetch path; ok is false when there is none here.
func (m *Manager) LogStartOffset(topic string, p int32) (int64, bool) {
	for _, rep := range m.cfg.Replicas() {
		if rep.Topic() == topic && rep.Partition() == p {
			return rep.LogStartOffset(), true
		}
	}
	return 0, false
}

func (m *Manager) pass(ctx context.Context, mode reconcileMode) {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	defer m.stats.passes.Add(1)
	n := m.stats.passes.Load()
	reps := m.cfg.Replicas()
	if !m.coldTierOK(ctx, reps) {
		return
	}
	w := m.readWorld() // before the walk: a change during it is seen next time
	if mode == reconcilePhased && m.skipWalk(n, w, reps) {
		m.stats.walksSkipped.Add(1)
		m.controllerWork(ctx, mode, n)
		return
	}
	// Workers goroutines for the whole pass, not one per led partition:
	// each new goroutine grew its stack again (a sixth of an idle pass at
	// 10,000 partitions).
	type visit struct {
		t         target
		in        visitInputs
		reconcile bool
		restores  []controlplane.QuarantineEntry
	}
	restores := m.restoreRequests()
	work := make(chan visit)
	var wg sync.WaitGroup
	for range m.cfg.Workers {
		wg.Go(func() {
			for v := range work {
				if due, ok := m.partitionPass(ctx, v.t, v.reconcile, v.restores); ok {
					m.settled(v.t.rep, v.in, due)
				}
			}
		})
	}
	for _, rep := range reps {
		t, ok := m.target(rep)
		if !ok {
			m.followerPass(rep, n)
			continue
		}
		v := visit{t: t, in: m.inputs(rep, t.id, true), restores: restores[partKey{t.id, rep.Partition()}]}
		quiet, recent := m.look(rep, v.in, n)
		v.reconcile = mode == reconcileAll || (mode == reconcilePhased && m.reconcileDue(n, t.id, rep.Partition(), recent))
		if !v.reconcile && len(v.restores) == 0 && quiet {
			m.stats.passedOver.Add(1)
			continue
		}
		work <- v
	}
	close(work)
	wg.Wait()
	m.endWalk(n, w, reps)
	m.controllerWork(ctx, mode, n)
}

// controllerWork is pass n's work on the controller node: the quarantine
// purge every pass, and on reconciling passes the cleanups of deleted
// topics, cut multipart uploads and removed brokers' tiers.
func (m *Manager) controllerWork(ctx context.Context, mode reconcileMode, n uint64) {
	if m.cfg.IsController() {
		m.purgeExpired(ctx)
	}
	reconcile := mode == reconcileAll || (mode == reconcilePhased && n%uint64(m.cfg.ReconcileEvery) == 0)
	if reconcile && m.cfg.IsController() {
		m.cleanDeletedTopics(ctx)
		m.abortCutUploads(ctx)
		if m.cfg.Location != "" {
			m.cleanRemovedBrokerTiers(ctx)
		}
	}
}

// target reports whether this node leads rep's partition with remote storage on.
func (m *Manager) target(rep *partition.Replica) (target, bool) {
	if !rep.Config().Bool(config.RemoteStorageEnable) {
		return target{}, false
	}
	top, ok := m.cfg.Store.TopicShared(rep.Topic()) // read only
	if !ok || (top.Internal && !TieredInternal(top.Name, rep.Config())) {
		return target{}, false
	}
	st, ok := m.cfg.Store.PartitionShared(rep.Topic(), rep.Partition()) // read only
	if !ok || st.Leader != m.cfg.NodeID {
		return target{}, false
	}
	return target{rep: rep, id: top.ID, epoch: rep.LeaderEpoch()}, true
}

// TieredInternal reports whether an internal topic with remote.storage.enable
// is tiered: only __consumer_offsets, and only while its local retention is
// unlimited (local.retention.ms and local.retention.bytes -1), so that its
// uploads are a backup of the groups' committed offsets for a restore from
// the bucket (package restore) and the coordinator keeps loading its whole
// partition from local disk. Other internal topics are never tiered.
func TieredInternal(name string, tc *config.TopicConfig) bool {
	return name == config.OffsetsTopic && tc.LocalRetentionMs() == -1 && tc.LocalRetentionBytes() == -1
}
