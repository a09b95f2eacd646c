package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket names.
const (
	BucketBrokers    = "shale_brokers"
	BucketTopics     = "shale_topics"
	BucketPartitions = "shale_partitions"
	BucketCluster    = "shale_cluster"
)

const clusterIDKey = "cluster_id"

// StoreConfig configures Open. The zero value is valid for one node.
type StoreConfig struct {
	// Replicas is the replica count of the buckets: 1 for one NATS server,
	// 3 for a NATS cluster. Default 1. It takes effect when a bucket is
	// created; an existing bucket keeps its settings.
	Replicas int
	// BrokerTTL is how long a broker registration lives without keepalive.
	// Default 6s; at least 1s (JetStream's limit-marker minimum).
	BrokerTTL time.Duration
	// KeepaliveInterval is how often RegisterBroker's loop refreshes the
	// registration. Default BrokerTTL/3; must be below BrokerTTL.
	KeepaliveInterval time.Duration
	// RequestTimeout bounds one JetStream request of the store's opening
	// and of RegisterBroker: a request unanswered by then is sent again
	// while the caller's context lives (a reply lost, or a server paused
	// or electing its meta leader). Default 5 s, the JetStream client's
	// own default.
	RequestTimeout time.Duration
	// Logger receives the store's logs. Default slog.Default().
	Logger *slog.Logger
	// Monitor counts the re-establishments of the store's watches (and
	// of those of RemoteLog and ACLs opened on it) and logs them; give it
	// the one whose Options the connection was made with. Default: a new
	// monitor logging to Logger.
	Monitor *ConnMonitor
}

func (c StoreConfig) withDefaults() (StoreConfig, error) {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.BrokerTTL == 0 {
		c.BrokerTTL = 6 * time.Second
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = c.BrokerTTL / 3
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Monitor == nil {
		c.Monitor = NewConnMonitor(c.Logger)
	}
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return c, fmt.Errorf("controlplane: Replicas %d: want 1..5", c.Replicas)
	case c.BrokerTTL < time.Second:
		return c, fmt.Errorf("controlplane: BrokerTTL %v: want at least 1s", c.BrokerTTL)
	case c.RequestTimeout < 0:
		return c, fmt.Errorf("controlplane: RequestTimeout %v: want positive", c.RequestTimeout)
	case c.KeepaliveInterval <= 0 || c.KeepaliveInterval >= c.BrokerTTL:
		return c, fmt.Errorf("controlplane: KeepaliveInterval %v: want between 0 and BrokerTTL %v", c.KeepaliveInterval, c.BrokerTTL)
	}
	return c, nil
}

// Store is one node's handle on the cluster metadata. All methods are safe
// for concurrent use. Reads (Topic, Topics, Partition, Brokers, ...) come
// from the in-memory cache and never block on the network; they reflect
// every write this Store made and, after watcher delay, every other
// writer's. Writes take a context that bounds their round trips.
//
// Goroutines: one event dispatcher, the broker keepalive once RegisterBroker
// is called, and per bucket watch a supervisor (watch.go) and (owned by the
// NATS client) a delivery goroutine. Close stops them all.
type Store struct {
	log       *slog.Logger
	cfg       StoreConfig
	nc        *nats.Conn
	js        jetstream.JetStream
	brokersKV jetstream.KeyValue
	// registrationsKV holds the durable registrations (registrations.go).
	registrationsKV jetstream.KeyValue
	topicsKV        jetstream.KeyValue
	partsKV         jetstream.KeyValue
	// clusterBucket is the cluster bucket (the cluster id, the draining
	// brokers), bound once: binding asks NATS for the stream's info.
	clusterBucket jetstream.KeyValue
	clusterID     string
	incarnation   string
	bus           *eventBus

	watches []*bucketWatch // set by Open, stopped by Close

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.RWMutex
		c cache
	}
	// gen counts the changes applied to the cache that published an event
	// (a keepalive publishes none): a reader that cached something derived
	// from the cache knows it is still true while gen has not moved.
	gen atomic.Uint64

	reg struct {
		sync.Mutex
		active  bool // a registration is being kept alive
		started bool // the keepalive goroutine runs
		broker  Broker
		rev     uint64
		logs    *[]ReplicaLog    // ReportReplicaLogs' report; nil until made
		offline []OfflineReplica // ReportOfflineReplicas' list
		// liveness answers the controller's probes (liveness.go) while
		// registered.
		liveness *nats.Subscription
		// renewedAt is when the last successful write of the registration
		// was sent (its start: the key lives BrokerTTL from at least then).
		renewedAt time.Time
	}
	// renewed is reg.renewedAt while a registration is kept alive (nil
	// otherwise), readable without waiting for a renewal in flight.
	renewed atomic.Pointer[time.Time]
}

// Open creates the buckets if absent, reads or creates the cluster id,
// starts the watchers and waits until the cache holds the buckets' current
// contents. ctx bounds Open only. The caller keeps ownership of nc and must
// Close the Store before closing nc.
func Open(ctx context.Context, nc *nats.Conn, cfg StoreConfig) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("controlplane: jetstream: %w", err)
	}
	s := &Store{log: cfg.Logger.With("component", "controlplane"), cfg: cfg, nc: nc, js: js,
		incarnation: randomID(), bus: newEventBus()}
	s.mu.c = newCache()
	ttl := cfg.BrokerTTL
	buckets := []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&s.brokersKV, jetstream.KeyValueConfig{Bucket: BucketBrokers, Description: "Shale broker registry",
			TTL: ttl, LimitMarkerTTL: max(ttl, time.Second), Replicas: cfg.Replicas}},
		{&s.registrationsKV, registrationsBucketConfig(cfg.Replicas)},
		{&s.topicsKV, jetstream.KeyValueConfig{Bucket: BucketTopics, Description: "Shale topics", Replicas: cfg.Replicas}},
		{&s.partsKV, jetstream.KeyValueConfig{Bucket: BucketPartitions, Description: "Shale partition state", Replicas: cfg.Replicas}},
	}
	for _, b := range buckets {
		if *b.kv, err = s.bucket(ctx, b.cfg); err != nil {
			return nil, err
		}
	}
	clusterKV, err := s.bucket(ctx, jetstream.KeyValueConfig{Bucket: BucketCluster, Description: "Shale cluster identity", Replicas: cfg.Replicas})
	if err != nil {
		return nil, err
	}
	s.clusterBucket = clusterKV
	if err := whileUnavailable(ctx, s.log, cfg.RequestTimeout, "cluster id", func(ctx context.Context) (err error) {
		s.clusterID, err = loadClusterID(ctx, clusterKV)
		return err
	}); err != nil {
		return nil, err
	}

	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Go(func() { s.bus.run(s.ctx) })
	s.wg.Go(s.resyncBrokers)
	keep := func(ch change) change { return ch }
	watched := []struct {
		name    string
		prepare func(change) change // outside the Store's lock
		apply   func(*cache, *slog.Logger, change) []Event
	}{
		{BucketBrokers, keep, (*cache).applyBroker},
		{BucketBrokerRegistrations, keep, (*cache).applyRegistration},
		{BucketTopics, keep, (*cache).applyTopic},
		{BucketPartitions, decodeAhead, (*cache).applyPartition},
	}
	for _, b := range watched {
		w, err := startWatch(nc, b.name, cfg.Monitor, func(ch change) { s.apply(b.apply, b.prepare(ch)) })
		if err != nil {
			s.Close()
			return nil, err
		}
		s.watches = append(s.watches, w)
	}
	// A start waiting here says so, and on what, every RequestTimeout.
	tick := time.NewTicker(cfg.RequestTimeout)
	defer tick.Stop()
	for _, w := range s.watches {
		for ready := false; !ready; {
			select {
			case <-w.ready:
				ready = true
			case <-tick.C:
				received, initial := w.initialLoad()
				s.log.Warn("waiting for a bucket's initial load", "bucket", w.bucket, "received", received, "of", initial)
			case <-ctx.Done():
				s.Close()
				return nil, fmt.Errorf("controlplane: initial load of bucket %s: %w", w.bucket, ctx.Err())
			}
		}
	}
	return s, nil
}

// bucket creates a bucket or binds to an existing one. An existing bucket
// whose settings differ from cfg is used as it is, with a warning.
// A JetStream that is unavailable is waited for until ctx ends
// (whileUnavailable).
func (s *Store) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := whileUnavailable(ctx, s.log, s.cfg.RequestTimeout, "bucket "+cfg.Bucket, func(ctx context.Context) (err error) {
		kv, err = s.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			s.log.Warn("bucket exists with other settings; using it as is", "bucket", cfg.Bucket)
			kv, err = s.js.KeyValue(ctx, cfg.Bucket)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("controlplane: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// loadClusterID returns the cluster id, creating it if this is the first
// node: create-if-absent, so concurrent first nodes agree on one id.
func loadClusterID(ctx context.Context, kv jetstream.KeyValue) (string, error) {
	id := randomID()
	_, err := kv.Create(ctx, clusterIDKey, []byte(id))
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return "", fmt.Errorf("controlplane: create cluster id: %w", err)
	}
	e, err := kv.Get(ctx, clusterIDKey)
	if err != nil {
		return "", fmt.Errorf("controlplane: read cluster id: %w", err)
	}
	return string(e.Value()), nil
}

// randomID returns 16 random bytes in Kafka's id form (base64url, 22 chars).
func randomID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("controlplane: crypto/rand failed: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// apply applies one change to the cache and publishes the resulting events,
// under s.mu so events come out in cache order.
func (s *Store) apply(fn func(*cache, *slog.Logger, change) []Event, ch change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := fn(&s.mu.c, s.log, ch)
	if len(evs) > 0 {
		s.gen.Add(1)
	}
	s.bus.publish(evs...)
}

// Gen returns the count of changes applied to the cache that published an
// event (topics, partition states, brokers' registrations; a keepalive
// publishes none): what a reader derived from the cache holds while Gen
// has not moved.
func (s *Store) Gen() uint64 { return s.gen.Load() }

// ClusterID returns the cluster's id, created by the first node to open the
// store (Kafka's cluster id form: 22 base64url characters).
func (s *Store) ClusterID() string { return s.clusterID }

// Subscribe calls fn for every change the cache applies from now on, from one
// goroutine, in cache order, and returns a function that stops the calls
// (a call in progress may finish). fn must not block for long; it may call
// the Store. Changes before Subscribe are not replayed: subscribe first,
// then read the current state, and tolerate seeing a change twice.
func (s *Store) Subscribe(fn func(Event)) (unsubscribe func()) {
	return s.bus.subscribe(fn)
}

// Close stops the keepalive and the event dispatcher, unsubscribes the
// watches, and waits for the goroutines it owns. It does not remove this node's
// broker registration (it expires after BrokerTTL; see DeregisterBroker) and
// does not close the NATS connection. Idempotent. Writes after Close return
// ErrClosed.
func (s *Store) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.reg.Lock()
	s.unsubscribeLiveness()
	s.reg.Unlock()
	// Together: with NATS away each waits for its consumer's deletion to
	// time out (5 s).
	var stops sync.WaitGroup
	for _, w := range s.watches {
		stops.Go(w.stop)
	}
	stops.Wait()
	s.wg.Wait()
}

func (s *Store) checkOpen() error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}
