package telemetry

import (
	"encoding/base64"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/shale-io/shale/clientmetrics"
	"github.com/shale-io/shale/kafka"
)

// Config bounds a Manager. Zero fields take the defaults below.
type Config struct {
	// TelemetryMaxBytes is the largest Metrics payload a PushTelemetry may
	// carry, as sent (compressed); Kafka's telemetry.max.bytes, 1 MiB.
	TelemetryMaxBytes int32
	// MaxDecompressedBytes bounds a payload once decompressed: 16 MiB.
	MaxDecompressedBytes int
	// MaxClients bounds the client instances remembered (Kafka's cache
	// holds 16384); a new one past it evicts the least recently seen.
	MaxClients int
	// MaxSeriesPerClient and MaxSeries bound the series exported on
	// /metrics, per client (1000) and in all (20000): a push's new series
	// past either are dropped (and counted), known ones still update.
	MaxSeriesPerClient, MaxSeries int
	// Now is the clock (tests inject one); nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.TelemetryMaxBytes <= 0 {
		c.TelemetryMaxBytes = 1 << 20
	}
	if c.MaxDecompressedBytes <= 0 {
		c.MaxDecompressedBytes = 16 << 20
	}
	if c.MaxClients <= 0 {
		c.MaxClients = 16384
	}
	if c.MaxSeriesPerClient <= 0 {
		c.MaxSeriesPerClient = 1000
	}
	if c.MaxSeries <= 0 {
		c.MaxSeries = 20000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// minExpiry is Kafka's client instance cache expiry: a client is forgotten
// max(minExpiry, 3 × its push interval) after its last request.
const minExpiry = time.Minute

// Manager holds the subscriptions and the client instances of one node.
// Safe for concurrent use: the handlers, the subscription watch and the
// scrapes call it from their own goroutines.
type Manager struct {
	cfg Config

	mu struct {
		sync.Mutex
		subs    map[string]clientmetrics.Subscription
		version int // bumped by every subscription change
		clients map[[16]byte]*client
		series  int // exported series of every client
		lastGC  time.Time
		// counters exported beside the clients' series
		dropped uint64           // series dropped at a bound
		pushes  map[int16]uint64 // PushTelemetry answers, by error code
	}
}

// client is one client instance. REQUIRES: Manager.mu held for every field.
type client struct {
	id   [16]byte
	meta clientmetrics.Client
	// labels name the client on its series: client_instance_id, client_id,
	// client_software_name, client_software_version.
	labels [4]string

	version        int // the subscription version it was computed at
	subscriptionID int32
	sub            clientmetrics.Combined

	lastGet, lastPush, lastSeen time.Time
	lastErr                     int16
	terminating                 bool

	series map[string]*series // by name and labels
}

// NewManager returns a Manager with no subscriptions.
func NewManager(cfg Config) *Manager {
	cfg.defaults()
	m := &Manager{cfg: cfg}
	m.mu.subs = map[string]clientmetrics.Subscription{}
	m.mu.clients = map[[16]byte]*client{}
	m.mu.pushes = map[int16]uint64{}
	return m
}

// SetSubscription applies a change of the control plane's subscriptions:
// nil or empty configs delete name. Configs that do not parse (written by
// something that skipped the validation) are logged and dropped. Clients
// get the new subscription on their next request, as in Kafka.
func (m *Manager) SetSubscription(name string, configs map[string]string) {
	var sub clientmetrics.Subscription
	var err error
	if len(configs) > 0 {
		if sub, err = clientmetrics.Parse(name, configs); err != nil {
			m.cfg.Logger.Warn("client metrics subscription ignored", "name", name, "err", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(configs) == 0 || err != nil {
		delete(m.mu.subs, name)
	} else {
		m.mu.subs[name] = sub
	}
	m.mu.version++
}

// instanceIDString is Kafka's Uuid.toString: base64url without padding.
func instanceIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// clientFor returns the client instance id, creating it from req's
// connection, or recomputing its subscription when the subscriptions
// changed since. REQUIRES: m.mu held.
func (m *Manager) clientFor(id [16]byte, req *kafka.Request, now time.Time) *client {
	c := m.mu.clients[id]
	if c == nil {
		m.evictForNew()
		c = &client{id: id, meta: clientMeta(id, req), version: -1}
		c.labels = [4]string{instanceIDString(id), c.meta[clientmetrics.MatchClientID],
			c.meta[clientmetrics.MatchClientSoftwareName], c.meta[clientmetrics.MatchClientSoftwareVersion]}
		m.mu.clients[id] = c
	}
	if c.version != m.mu.version {
		subs := make([]clientmetrics.Subscription, 0, len(m.mu.subs))
		for _, s := range m.mu.subs {
			subs = append(subs, s)
		}
		c.sub = clientmetrics.Combine(subs, c.meta)
		c.subscriptionID = c.sub.SubscriptionID(id)
		c.version = m.mu.version
	}
	c.lastSeen = now
	return c
}

// clientMeta is what the subscriptions' selectors match a client against.
func clientMeta(id [16]byte, req *kafka.Request) clientmetrics.Client {
	meta := clientmetrics.Client{clientmetrics.MatchClientInstanceID: instanceIDString(id), clientmetrics.MatchClientID: req.ClientID}
	if req.Conn != nil {
		sw := req.Conn.Software()
		meta[clientmetrics.MatchClientSoftwareName] = sw.Name
		meta[clientmetrics.MatchClientSoftwareVersion] = sw.Version
		if req.Conn.Remote != nil {
			if host, port, err := net.SplitHostPort(req.Conn.Remote.String()); err == nil {
				meta[clientmetrics.MatchClientSourceAddress] = host
				meta[clientmetrics.MatchClientSourcePort] = port
			}
		}
	}
	return meta
}

// expiry is how long after its last request c is forgotten.
func (c *client) expiry() time.Duration {
	return max(minExpiry, 3*time.Duration(c.sub.IntervalMs)*time.Millisecond)
}

// gc forgets the clients past their expiry, at most once a second.
// REQUIRES: m.mu held.
func (m *Manager) gc(now time.Time) {
	if now.Sub(m.mu.lastGC) < time.Second {
		return
	}
	m.mu.lastGC = now
	for id, c := range m.mu.clients {
		if now.Sub(c.lastSeen) >= c.expiry() {
			m.forget(id, c)
		}
	}
}

// evictForNew makes room for one more client: the least recently seen goes
// when the bound is reached. REQUIRES: m.mu held.
func (m *Manager) evictForNew() {
	if len(m.mu.clients) < m.cfg.MaxClients {
		return
	}
	var oldest *client
	for _, c := range m.mu.clients {
		if oldest == nil || c.lastSeen.Before(oldest.lastSeen) {
			oldest = c
		}
	}
	m.forget(oldest.id, oldest)
}

// REQUIRES: m.mu held.
func (m *Manager) forget(id [16]byte, c *client) {
	m.mu.series -= len(c.series)
	delete(m.mu.clients, id)
}

// Clients returns the instance ids of the clients remembered, as Kafka
// prints them, sorted (tests and tools).
func (m *Manager) Clients() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gc(m.cfg.Now())
	out := make([]string, 0, len(m.mu.clients))
	for id := range m.mu.clients {
		out = append(out, instanceIDString(id))
	}
	slices.Sort(out)
	return out
}

// pushResult counts a PushTelemetry answer. REQUIRES: m.mu held.
func (m *Manager) pushResult(code int16) { m.mu.pushes[code]++ }
