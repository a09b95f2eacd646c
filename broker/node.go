// Package broker wires one Shale node together: the control-plane store on
// NATS, the replica manager (package replica: the local replicas, their
// roles, the follower fetchers), the Kafka front door with every API
// handler, and the background loops (retention, flushing). It is the
// composition package: cmd/shale and the tests start nodes through it.
//
// The Kafka API handlers live in the packages that own their behaviour
// (ingest, fetch, group, admin); this package registers them.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shale-io/shale/admin"
	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/fetch"
	"github.com/shale-io/shale/infra/adminauth"
	"github.com/shale-io/shale/infra/buildinfo"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/infra/metrics"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/ingest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/lag"
	"github.com/shale-io/shale/quota"
	"github.com/shale-io/shale/replica"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/vfs"
	"github.com/shale-io/shale/share"
	"github.com/shale-io/shale/telemetry"
	"github.com/shale-io/shale/tiering"
	"github.com/shale-io/shale/tiering/coldread"
)

// Node is one running Shale broker.
type Node struct {
	logReports logReports    // after an unclean start (clean_shutdown.go)
	offline    offlineReport // the offline replicas reported (log_offline.go)
	cfg        config.Broker
	logger     *slog.Logger

	nats *natsembed.Server // nil with an external NATS
	nc   *nats.Conn
	// natsMon logs the connection's events and counts them and the
	// control-plane watches' re-establishments (metrics).
	natsMon *controlplane.ConnMonitor
	store   *controlplane.Store
	ctrl    *controlplane.Controller
	cold    *coldread.Reader
	lag     *lag.Sampler // consumer lag of the groups coordinated here; nil when off (consumer_lag.go)

	bucketMetrics *objstore.Counters
	metrics       *metrics.Registry // see metrics.go
	replicas      *replica.Manager  // see replica/
	apis          *admin.Handlers   // metadata and admin APIs; see admin/
	coords        *coordinators     // the group and transaction coordinators; see coordinators.go
	share         *shareGroups      // KIP-932 share groups (share.go)
	// leadershipTo receives the replicas' leadership changes once the
	// group and transaction coordinators exist (nil before).
	leadershipTo  atomic.Pointer[coordinators]
	tiering       *nodeTiering // see tiering.go
	pids          *controlplane.ProducerIDs
	server        *kafka.Server
	admin         *http.Server
	kafkaLn       net.Listener    // the inter-broker listener, listeners[0]
	listeners     []boundListener // see listeners.go
	scram         *controlplane.SCRAMCredentials
	tokens        *controlplane.DelegationTokens
	quotaStore    *controlplane.ClientQuotas  // see quotas.go
	clientMetrics *controlplane.ClientMetrics // KIP-714 subscriptions (telemetry.go)
	groupConfigs  *controlplane.GroupConfigs  // KIP-848/KIP-932 group configs (group_configs.go)
	groupRules    coordinator.GroupConfigRules
	telemetry     *telemetry.Manager     // pushed client metrics (telemetry.go)
	features      *controlplane.Features // the finalized feature levels (UpdateFeatures)
	quotas        *quota.Manager
	authz         *authz.Authorizer   // nil: the authorizer off (authorizer.go)
	fetchSessions *fetch.SessionCache // incremental fetch sessions (KIP-227), one for every listener
	acls          *controlplane.ACLs  // nil: the authorizer off
	interBroker   *interbroker.Dialer // every connection to another node (interbroker.go)
	adminLn       net.Listener

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	ready     chan struct{}
}

// StartOption sets what a node takes from its caller rather than its
// config: parts a test swaps in.
type StartOption func(*startOptions)

type startOptions struct {
	logFS vfs.FS
}

// WithLogFS runs the node's partition logs (segments, producer snapshots,
// the high watermark checkpoint) on fs, a wrapper of the operating
// system's filesystem: a test fails one node's fsyncs with vfs.WithErrors
// while the others' succeed. Default vfs.Default.
func WithLogFS(fs vfs.FS) StartOption { return func(o *startOptions) { o.logFS = fs } }

// Start starts a node: the embedded NATS server (unless cfg.NATS names an
// external one), the control-plane store, the local replicas, the Kafka
// listener and the admin HTTP listener. cfg must have passed Validate.
func Start(ctx context.Context, cfg config.Broker, logger *slog.Logger, opts ...StartOption) (_ *Node, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	var so startOptions
	for _, o := range opts {
		o(&so)
	}
	n := &Node{cfg: cfg, logger: logger.With("node", cfg.NodeID), ready: make(chan struct{})}
	n.natsMon = controlplane.NewConnMonitor(n.logger)
	n.metrics = n.newMetrics()
	defer func() {
		if err != nil {
			n.Close(context.Background())
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	// Before anything joins the cluster: a node whose bucket cannot be
	// used must not start.
	if err := n.probeBucket(ctx); err != nil {
		return nil, err
	}
	// The control plane is waited for up to the registration timeout: a
	// request unanswered within the store's RequestTimeout is sent again,
	// so a NATS that is busy or paused at the start, or a lost reply,
	// delays the node instead of stopping or wedging it.
	octx, ocancel := context.WithTimeout(ctx, cfg.InitialBrokerRegistrationTimeout)
	defer ocancel()
	if err := n.startNATS(octx); err != nil {
		return nil, err
	}
	n.store, err = controlplane.Open(octx, n.nc, controlplane.StoreConfig{Replicas: cfg.NATSReplicas, BrokerTTL: cfg.BrokerSessionTimeout,
		Logger: n.logger, Monitor: n.natsMon})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	// Listen before registering, so that a port 0 (tests) is advertised as
	// the port actually bound.
	if err := n.bindListeners(ctx); err != nil {
		return nil, err
	}
	cfg = n.cfg
	if err := n.startAuthorizer(ctx); err != nil {
		return nil, err
	}
	clean, err := takeCleanShutdown(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("reading the clean-shutdown record: %w", err)
	}
	n.logReports.active = !clean
	host, port := cfg.AdvertisedHostPort()
	if err := n.register(octx, controlplane.Broker{NodeID: cfg.NodeID, Host: host, Port: port, Rack: cfg.Rack, UncleanStart: !clean,
		Listeners: cfg.AdvertisedListenerList()}); err != nil {
		return nil, fmt.Errorf("registering broker %d: %w", cfg.NodeID, err)
	}
	n.pids, err = controlplane.OpenProducerIDs(ctx, n.nc, cfg.NATSReplicas)
	if err != nil {
		return nil, err
	}
	rcfg := replica.ConfigFrom(cfg)
	rcfg.Logger, rcfg.OnISRChange, rcfg.Dialer = n.logger, n.metrics.ISRChanged, n.interBroker
	rcfg.Incarnation = n.store.OwnIncarnation()
	rcfg.FS = so.logFS
	rcfg.OnLeadership = func(topic string, p int32) {
		if cs := n.leadershipTo.Load(); cs != nil {
			cs.LeadershipChanged(topic, p)
		}
	}
	n.replicas = replica.New(rcfg, n.store)
	n.ctrl, err = controlplane.StartController(ctx, n.store, controlplane.ControllerConfig{
		NodeID: cfg.NodeID, LeaseTTL: cfg.ControllerLease, Logger: n.logger,
		AutoLeaderRebalance:                cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval:       cfg.LeaderImbalanceCheckInterval,
		LeaderImbalancePerBrokerPercentage: cfg.LeaderImbalancePerBrokerPercentage,
		Balancer:                           n.balancerConfig(), // balancer.go
		Dial:                               n.interBroker.DialContext,
		Unclean: func(topic string) bool {
			t, ok := n.store.Topic(topic)
			return ok && n.replicas.TopicConfig(t).Bool(config.UncleanLeaderElection)
		},
		MinISR: func(topic string) int {
			t, ok := n.store.Topic(topic)
			if !ok {
				return 1
			}
			return int(n.replicas.TopicConfig(t).Int64(config.MinInsyncReplicas))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if err := n.replicas.Reconcile(); err != nil {
		return nil, fmt.Errorf("opening local replicas: %w", err)
	}
	// The replicas that failed to open are reported before the log ends
	// of an unclean start: a report that does not name a partition trusts
	// the node with it.
	n.reportOffline(ctx)
	n.refreshLogReports(true)
	if err := n.startTiering(ctx); err != nil {
		return nil, fmt.Errorf("tiering: %w", err)
	}
	n.replicas.SetRemoteTier(n.tiering.meta, n.tiering.bucket, n.tiering.manager.InEffect) // followers rebuild from the remote tail
	if n.cold, err = n.newColdReader(); err != nil {
		return nil, fmt.Errorf("cold reads: %w", err)
	}

	if err := n.startQuotas(ctx); err != nil {
		return nil, fmt.Errorf("client quotas: %w", err)
	}
	if err := n.startTelemetry(ctx); err != nil {
		return nil, fmt.Errorf("client telemetry: %w", err)
	}
	if err := n.startGroupConfigs(ctx); err != nil {
		return nil, fmt.Errorf("group configs: %w", err)
	}
	reg := kafka.NewRegistry()
	reg.SetIdentity(kafka.Identity{ClusterID: n.store.ClusterID(), NodeID: n.cfg.NodeID})
	if n.features, err = controlplane.OpenFeatures(ctx, n.nc, n.cfg.NATSReplicas, n.natsMon); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	n.registerAPIs(reg)
	// After registerAPIs, which advertises the features at the levels
	// configured (epoch 1): the cluster's finalized levels replace them,
	// at epoch 1 + their revision, which grows with every update.
	if err := n.features.Watch(ctx, func(levels map[string]int16, rev uint64) { reg.SetFinalized(levels, int64(rev)+1) }); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	// The coordinators load each internal partition this node leads at
	// once: those it comes to lead from now on through OnLeadership, those
	// it leads already now (in that order, so that none is missed).
	n.leadershipTo.Store(n.coords)
	n.coords.LoadLed()
	n.server = kafka.NewServer(kafka.ServerConfig{MaxRequestBytes: cfg.MaxRequestBytes, Observer: newRequestObserver(n.metrics),
		SlowRequestThreshold: cfg.RequestLogSlowThreshold, AuthObserver: n.metrics, RequestQuota: requestQuota{n.quotas},
		SASLMaxReceiveBytes: cfg.SASLServerMaxReceiveSize, FailedAuthenticationDelay: failedAuthDelay(cfg.ConnectionFailedAuthenticationDelay),
		Connections: connectionLimits(&cfg), ConnObserver: n.metrics}, reg, n.logger)
	var adminHandler http.Handler
	if cfg.AdminListen != "" {
		if adminHandler, err = n.adminHandler(); err != nil {
			return nil, err
		}
		if n.adminLn, err = n.listenAdmin(); err != nil {
			return nil, err
		}
	}

	loopCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.goLoop(func() { n.replicas.Run(loopCtx) }) // reconciles on control-plane events, ISR checks
	n.goLoop(func() { n.retentionLoop(loopCtx) })
	n.goLoop(func() { n.flushLoop(loopCtx) })
	n.goLoop(func() { n.producerExpiryLoop(loopCtx) })
	n.goLoop(func() { n.sessionLoop(loopCtx) })
	n.goLoop(func() { n.logReportLoop(loopCtx) })
	n.goLoop(func() { n.restorePublishLoop(loopCtx) }) // restore.go
	n.goLoop(func() { n.tokenSweepLoop(loopCtx) })     // delegation_tokens.go
	n.startLagSampler(loopCtx)
	n.serveListeners()
	if n.adminLn != nil {
		n.admin = &http.Server{Handler: adminHandler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: adminauth.ErrorLog(n.logger.With("component", "admin"))}
		n.goLoop(func() {
			if err := n.admin.Serve(n.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.logger.Error("admin listener stopped", "err", err)
			}
		})
	}
	close(n.ready)
	bi := buildinfo.Read()
	n.logger.Info("shale node started", "kafka", n.kafkaLn.Addr().String(), "advertise", cfg.Advertise,
		"admin", cfg.AdminListen, "data_dir", cfg.DataDir, "cluster_id", n.store.ClusterID(),
		"version", bi.Version, "revision", bi.ShortRevision())
	return n, nil
}

// startNATS connects to the external NATS cluster, or starts the embedded
// server and connects to it. An external cluster that does not answer is
// tried again until ctx ends (the registration timeout): a node may start
// before its NATS or while it restarts.
func (n *Node) startNATS(ctx context.Context) error {
	if n.cfg.NATS != "" {
		opts := []nats.Option{nats.Name(fmt.Sprintf("shale-%d", n.cfg.NodeID)), nats.MaxReconnects(-1)}
		if n.cfg.NATSCreds != "" {
			opts = append(opts, nats.UserCredentials(n.cfg.NATSCreds))
		}
		if n.cfg.NATSUser != "" {
			opts = append(opts, nats.UserInfo(n.cfg.NATSUser, n.cfg.NATSPassword))
		}
		if n.cfg.NATSTLSCA != "" {
			opts = append(opts, nats.RootCAs(n.cfg.NATSTLSCA))
		}
		if n.cfg.NATSTLSCert != "" {
			opts = append(opts, nats.ClientCert(n.cfg.NATSTLSCert, n.cfg.NATSTLSKey))
		}
		opts = append(opts, n.natsMon.Options()...)
		for wait := 250 * time.Millisecond; ; wait = min(2*wait, 4*time.Second) {
			nc, err := nats.Connect(n.cfg.NATS, opts...)
			if err == nil {
				n.nc = nc
				return nil
			}
			if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
				return fmt.Errorf("connecting to NATS %s: %w", n.cfg.NATS, err)
			}
			n.logger.Warn("NATS not reachable; trying again", "nats", n.cfg.NATS, "err", err, "in", wait)
			select {
			case <-ctx.Done():
				return fmt.Errorf("connecting to NATS %s: %w (gave up after initial_broker_registration_timeout)", n.cfg.NATS, err)
			case <-time.After(wait):
			}
		}
	}
	host, portStr, err := net.SplitHostPort(n.cfg.NATSListen)
	if err != nil {
		return fmt.Errorf("nats_listen %q: %w", n.cfg.NATSListen, err)
	}
	var port int
	fmt.Sscanf(portStr, "%d", &port)
	srv, err := natsembed.Start(natsembed.Config{
		StoreDir: filepath.Join(n.cfg.DataDir, "nats"), Host: host, Port: port,
		ServerName: fmt.Sprintf("shale-%d", n.cfg.NodeID), Logger: natsLogger(n.logger),
	})
	if err != nil {
		return fmt.Errorf("embedded NATS: %w", err)
	}
	n.nats = srv
	n.nc, err = srv.Connect(n.natsMon.Options()...)
	return err
}

// register registers this broker in the control plane. After a crash the
// previous process's registration lives until its TTL runs out; like a Kafka
// broker fenced until its old session expires, the node retries until then.
// A control plane that does not answer is tried again until ctx ends (the
// registration timeout): a registration is idempotent for its store.
func (n *Node) register(ctx context.Context, b controlplane.Broker) error {
	deadline := time.Now().Add(n.cfg.BrokerSessionTimeout + 5*time.Second)
	for {
		err := n.store.RegisterBroker(ctx, b)
		switch {
		case err == nil || ctx.Err() != nil:
			return err
		case controlplane.Unavailable(err):
			n.logger.Warn("control plane unavailable; registering again", "err", err)
		case errors.Is(err, controlplane.ErrBrokerIDInUse) && time.Now().Before(deadline):
			n.logger.Info("waiting for the previous registration of this node id to expire", "err", err)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (n *Node) registerAPIs(reg *kafka.Registry) {
	kafka.RegisterSASL(reg) // answers ILLEGAL_SASL_STATE on listeners without SASL
	fopts := append(fetchOptions(n.cold), fetch.WithAuthorizer(n.authz), fetch.WithDirectory(directory{n.store}))
	n.fetchSessions = fetch.NewSessionCache(n.cfg.MaxIncrementalFetchSessionCacheSlots)
	fetchOpts := []fetch.Option{fetch.WithQuotas(n.quotas), fetch.WithSessionCache(n.fetchSessions), fetch.WithFollowerReads(n.replicas)}
	if n.cfg.ReplicaSelectorClass == config.RackAwareReplicaSelector {
		fetchOpts = append(fetchOpts, fetch.WithRackAwareSelector(n.cfg.Rack, directory{n.store}))
	}
	fetch.RegisterFetch(reg, n.replicas, n.metrics, n.logger, append(fopts, fetchOpts...)...)
	fetch.RegisterListOffsets(reg, n.replicas, n.logger, fopts...)
	fetch.RegisterOffsetForLeaderEpoch(reg, n.replicas, n.logger, fopts...)
	var tm *tiering.Manager // a nil *nodeTiering is tiering off
	if n.tiering != nil {
		tm = n.tiering.manager
	}
	n.coords = n.buildCoordinators(reg)
	shapes := n.coords.internalTopicShapes()
	shapes[share.StateTopic] = n.shareStateTopicShape
	n.apis = admin.Register(reg, admin.Config{Broker: n.cfg, Store: n.store, Replicas: n.replicas, Tiering: tm,
		ControllerID: n.controllerID, SCRAM: n.scram, DelegationTokens: n.tokens, Quotas: n.quotaStore, Features: n.features, ClientMetrics: n.clientMetrics,
		GroupConfigs: n.groupConfigs, GroupConfigRules: n.groupRules,
		Authorizer: n.authz, ACLs: n.acls, InternalTopicShapes: shapes, Logger: n.logger})
	ingest.RegisterInitProducerID(reg, n.pids, n.coords.txns, n.authz, n.logger)
	ingest.RegisterProduceConfig(reg, ingest.ProduceConfig{Leaders: n.replicas, Observer: n.metrics, Logger: n.logger,
		TxnVerifier: n.txnVerifier(n.coords), Quotas: n.quotas, Authorizer: n.authz, Directory: directory{n.store}})
	n.registerShareAPIs(reg)
	telemetry.Register(reg, n.telemetry)
}

// KafkaAddr is the address the Kafka listener is bound to.
func (n *Node) KafkaAddr() string { return n.kafkaLn.Addr().String() }

// AdminAddr is the admin HTTP address, or "" when disabled.
func (n *Node) AdminAddr() string {
	if n.adminLn == nil {
		return ""
	}
	return n.adminLn.Addr().String()
}

// Store exposes the control-plane store (for tools and tests).
func (n *Node) Store() *controlplane.Store { return n.store }

// Replicas exposes the replica manager (for tools and tests).
func (n *Node) Replicas() *replica.Manager { return n.replicas }

// ReplicaFetchers lists this node's follower fetchers, by leader and index
// (tools and tests).
func (n *Node) ReplicaFetchers() []replica.FetcherStatus {
	if n.replicas == nil {
		return nil
	}
	return n.replicas.Fetchers()
}

// controllerID is the node holding the controller lease, as last seen.
func (n *Node) controllerID() int32 {
	return n.ctrl.ID()
}

func (n *Node) goLoop(fn func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		fn()
	}()
}

// reconcile brings local replicas in line with the control plane now.
func (n *Node) reconcile() { n.replicas.ReconcileOrLog() }

// every runs fn every d until ctx is done; the first run is d after the
// call. It returns when ctx is done, never while fn runs.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

func (n *Node) flushLoop(ctx context.Context) {
	every(ctx, n.cfg.FlushCheckInterval, func() {
		// While no log has flush.ms or a deleted segment waiting, a pass
		// would visit every partition for nothing (the node's replicas
		// share the log dir's checkpoint, written below).
		if segment.AnyFlushDue() {
			for _, rep := range n.replicas.All() {
				if err := rep.MaybeFlush(); err != nil && rep.LogErr() == nil {
					n.logger.Error("flush failed", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
				}
			}
		}
		if err := n.replicas.CheckpointHighWatermarks(false); err != nil {
			n.logger.Error("high watermark checkpoint failed", "err", err)
		}
		n.moveAwayFromOfflineLogs(ctx)
		n.reportOffline(ctx)
	})
}

func (n *Node) retentionLoop(ctx context.Context) {
	every(ctx, n.cfg.RetentionCheckInterval, func() { n.applyRetention(time.Now()) })
}

// producerExpiryLoop has every replica, leader or follower, forget its
// expired producers every producer_id_expiration_check_interval (Kafka's
// producer.id.expiration.check.interval.ms).
func (n *Node) producerExpiryLoop(ctx context.Context) {
	every(ctx, n.cfg.ProducerIDExpirationCheckInterval, func() {
		now := time.Now()
		for _, rep := range n.replicas.All() {
			if k := rep.ExpireProducers(now); k > 0 {
				n.logger.Debug("expired producers", "topic", rep.Topic(), "partition", rep.Partition(), "producers", k)
			}
		}
	})
}

// applyRetention runs time and size retention on every replica once.
func (n *Node) applyRetention(now time.Time) {
	for _, rep := range n.replicas.All() {
		if err := rep.ApplyRetention(now); err != nil {
			n.logger.Error("retention failed", "topic", rep.Topic(), "partition", rep.Partition(), "err", err)
		}
	}
}

func (n *Node) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle(TierStatusPath, n.tierStatusHandler())
	mux.Handle(adminapi.ConsumerLagPath, n.consumerLagHandler())
	mux.Handle(adminapi.SharePartitionsPath, n.sharePartitionsHandler())
	n.mountBalancer(mux)                                 // balancer.go
	n.mountQuarantine(mux)                               // quarantine.go
	mux.HandleFunc(adminapi.RestorePath, n.serveRestore) // restore.go
	mux.HandleFunc(adminapi.ForkPath, n.serveFork)       // restore.go
	mux.Handle(adminapi.HealthPath, n.healthHandler())
	n.mountConsole(mux) // console.go
	n.mountMetrics(mux)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if n.nc == nil || !n.nc.IsConnected() {
			http.Error(w, "control plane disconnected", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// Close stops the node gracefully: stop accepting and finish in-flight
// requests, stop the background loops, flush and close every replica (which
// writes the clean-shutdown markers), then leave the control plane and stop
// NATS. It is idempotent.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		var errs []error
		n.controlledShutdown(ctx)
		n.closeShare()
		if n.server != nil {
			// Serve may not have started; closing the listeners ends it either way.
			defer n.closeListeners()
			if n.coords != nil {
				n.coords.StopGroups()
				n.coords.StopTransactions()
			}
			errs = append(errs, n.server.Shutdown(ctx))
		} else {
			n.closeListeners()
		}
		if n.admin != nil {
			errs = append(errs, n.admin.Shutdown(ctx))
		} else if n.adminLn != nil {
			n.adminLn.Close()
		}
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		if n.lag != nil {
			n.lag.Close()
		}
		if n.replicas != nil {
			n.replicas.StopFetchers()
		}
		if n.cold != nil {
			n.cold.Close()
		}
		n.stopTieringLoop()
		if n.replicas != nil {
			err := n.replicas.Close()
			errs = append(errs, err)
			if err == nil {
				if werr := writeCleanShutdown(n.cfg.DataDir); werr != nil {
					n.logger.Warn("writing the clean-shutdown record", "err", werr)
				}
			}
		}
		if n.ctrl != nil {
			n.ctrl.Close()
		}
		if n.store != nil {
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := n.store.DeregisterBroker(dctx); err != nil {
				n.logger.Warn("deregistering from the control plane", "err", err)
			}
			cancel()
		}
		// The control plane's watchers stop together: with NATS away each
		// one's unsubscribe waits out its consumer deletion (5 s in
		// nats.go), so one after another the stop took that many times.
		var closing sync.WaitGroup
		for _, c := range []func(){n.closeTieringMeta, n.closeQuotas, n.closeTelemetry, n.closeGroupConfigs, n.closeACLs, n.closeStore} {
			closing.Go(c)
		}
		closing.Wait()
		if n.nc != nil {
			n.nc.Close()
		}
		if n.nats != nil {
			n.nats.Shutdown()
		}
		n.closeErr = errors.Join(errs...)
		if n.closeErr != nil && strings.Contains(n.closeErr.Error(), "context") {
			n.logger.Warn("graceful stop cut short", "err", n.closeErr)
		}
	})
	return n.closeErr
}

func (n *Node) closeQuotas() {
	if n.quotaStore != nil {
		n.quotaStore.Close()
	}
	if n.features != nil {
		n.features.Close()
	}
}

func (n *Node) closeACLs() {
	if n.acls != nil {
		n.acls.Close()
	}
}

func (n *Node) closeStore() {
	if n.store != nil {
		n.store.Close()
	}
}
