package natsembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Sentinel errors returned by Start and StartCluster, wrapped with detail.
var (
	// ErrInvalidConfig reports a Config that cannot start a server.
	ErrInvalidConfig = errors.New("natsembed: invalid config")
	// ErrNotReady reports a server that did not become ready (client
	// listener, JetStream, or a cluster meta leader) before the deadline.
	ErrNotReady = errors.New("natsembed: server not ready")
)

// DefaultReadyTimeout bounds how long Start waits for the server to accept
// clients and for JetStream to be enabled.
const DefaultReadyTimeout = 10 * time.Second

// Config describes one embedded NATS server.
type Config struct {
	// StoreDir is the JetStream storage directory (under the node's data
	// dir). Required.
	StoreDir string
	// Host is the client listen address; it must be a loopback address.
	// Default 127.0.0.1.
	Host string
	// Port is the client port; 0 or -1 picks a random free port.
	Port int
	// ServerName names the server; required when Cluster is set, since
	// JetStream clustering identifies peers by name. Default "shale-nats".
	ServerName string
	// Cluster, when set, makes the server a member of a NATS cluster with
	// clustered JetStream.
	Cluster *ClusterConfig
	// Logger receives the server's logs: notices at Info, warnings at Warn,
	// errors at Error, debug at Debug (only if the logger enables Debug).
	// Default slog.Default().
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for readiness. Default DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

// ClusterConfig is the route (server-to-server) side of a clustered server.
type ClusterConfig struct {
	// Name is the cluster name, the same on every member. Required.
	Name string
	// Host is the route listen address; loopback only. Default 127.0.0.1.
	Host string
	// Port is the route port; required (> 0) because peers dial it.
	Port int
	// Routes are the other members' route URLs, e.g. "nats://127.0.0.1:6222".
	// Listing this server's own route is harmless.
	Routes []string
	// NoAdvertise keeps the server from telling clients the other members'
	// addresses (its INFO's connect_urls).
	NoAdvertise bool
	// Advertise is the route address (host:port) peers are told to dial
	// when they learn of this server from another (an implicit route);
	// default: the address its routes come from.
	Advertise string
}

// Server is one running embedded NATS server. Its methods are safe for
// concurrent use.
type Server struct {
	ns       *server.Server
	name     string
	shutdown sync.Once
}

// Start starts a NATS server with JetStream as described by cfg and waits,
// bounded by cfg.ReadyTimeout, until it accepts client connections and
// JetStream is enabled. A clustered server may still lack a JetStream meta
// leader when Start returns (its peers may not be up yet); StartCluster waits
// for one. On error no server is left running.
func Start(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		Host:               cfg.Host,
		Port:               cfg.Port,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		JetStreamMaxMemory: -1,
		JetStreamMaxStore:  -1,
		NoSigs:             true,
	}
	if c := cfg.Cluster; c != nil {
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: c.Host, Port: c.Port, NoAdvertise: c.NoAdvertise, Advertise: c.Advertise}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("%w: route %q: %v", ErrInvalidConfig, r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	lg := cfg.Logger.With("component", "nats", "server", cfg.ServerName)
	ns.SetLoggerV2(slogAdapter{lg}, lg.Enabled(context.Background(), slog.LevelDebug), false, false)
	ns.Start()
	s := &Server{ns: ns, name: cfg.ServerName}
	if !ns.ReadyForConnections(cfg.ReadyTimeout) {
		s.Shutdown()
		return nil, fmt.Errorf("%w: %s: not accepting connections after %v", ErrNotReady, cfg.ServerName, cfg.ReadyTimeout)
	}
	if err := pollUntil(cfg.ReadyTimeout, ns.JetStreamEnabled); err != nil {
		s.Shutdown()
		return nil, fmt.Errorf("%w: %s: JetStream not enabled: %v", ErrNotReady, cfg.ServerName, err)
	}
	return s, nil
}

func (c Config) withDefaults() (Config, error) {
	if c.StoreDir == "" {
		return c, fmt.Errorf("%w: StoreDir is required", ErrInvalidConfig)
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if err := requireLoopback(c.Host); err != nil {
		return c, err
	}
	if c.Port == 0 {
		c.Port = server.RANDOM_PORT
	}
	if c.ServerName == "" {
		if c.Cluster != nil {
			return c, fmt.Errorf("%w: ServerName is required in a cluster", ErrInvalidConfig)
		}
		c.ServerName = "shale-nats"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if cl := c.Cluster; cl != nil {
		cc := *cl
		if cc.Name == "" {
			return c, fmt.Errorf("%w: Cluster.Name is required", ErrInvalidConfig)
		}
		if cc.Host == "" {
			cc.Host = "127.0.0.1"
		}
		if err := requireLoopback(cc.Host); err != nil {
			return c, err
		}
		if cc.Port <= 0 {
			return c, fmt.Errorf("%w: Cluster.Port must be > 0", ErrInvalidConfig)
		}
		c.Cluster = &cc
	}
	return c, nil
}

func requireLoopback(host string) error {
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: host %q is not a loopback address", ErrInvalidConfig, host)
	}
	return nil
}

// Name returns the server's name.
func (s *Server) Name() string { return s.name }

// ClientURL returns the nats:// URL clients use to reach this server over TCP.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Connect opens a client connection to this server through an in-process
// pipe (no TCP). Because the pipe reaches only this server, a connection
// that must survive this server's shutdown should instead dial the TCP
// URLs of several cluster members. The caller owns and closes the returned
// connection.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.InProcessServer(s.ns), nats.Name(s.name + "-inproc")}, opts...)
	return nats.Connect(s.ClientURL(), all...)
}

// JetStreamIsLeader reports whether this server is the JetStream meta leader
// of its cluster (always false for a standalone server).
func (s *Server) JetStreamIsLeader() bool { return s.ns.JetStreamIsLeader() }

// NumRoutes is the number of route connections the server has to its
// cluster peers.
func (s *Server) NumRoutes() int { return s.ns.NumRoutes() }

// Shutdown stops the server and waits until it has stopped. It is idempotent
// and safe to call concurrently.
func (s *Server) Shutdown() {
	s.shutdown.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
}

// pollUntil calls cond every few milliseconds until it returns true or the
// timeout passes.
func pollUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met after %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
