package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Values are one entity's quotas by configuration key (producer_byte_rate:
// 1048576).
type Values map[string]float64

// Manager holds the cluster's quota configurations and the rate of every
// user and client id that a quota applies to, and answers how long a
// client over its quota must be throttled. Safe for concurrent use; it
// reads no clock: every call takes the time.
//
// Configurations are replaced whole (SetAll, from the control plane's
// watch) or per entity (Set); a change applies to the next request,
// keeping the rates measured so far.
type Manager struct {
	cfg     Config
	configs atomic.Pointer[map[Entity]Values] // immutable once published

	mu struct {
		sync.Mutex
		rates     map[sensorKey]*rate
		lastSweep time.Time
	}
}

// idleExpiry is how long a rate nobody records on is kept (Kafka's
// INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS).
const idleExpiry = time.Hour

// NewManager returns a manager with no quota, measuring with cfg (whose
// zero fields take Kafka's defaults). It panics on a cfg that does not
// validate, a program invariant: the node validates its configuration
// first.
func NewManager(cfg Config) *Manager {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	m := &Manager{cfg: cfg}
	m.configs.Store(&map[Entity]Values{})
	m.mu.rates = map[sensorKey]*rate{}
	return m
}

// Config is the manager's window configuration, with defaults applied.
func (m *Manager) Config() Config { return m.cfg }

// SetAll replaces every configuration with all. The manager keeps its own
// copy.
func (m *Manager) SetAll(all map[Entity]Values) {
	cp := make(map[Entity]Values, len(all))
	for e, v := range all {
		if len(v) > 0 {
			cp[e] = copyValues(v)
		}
	}
	m.configs.Store(&cp)
}

// Set replaces e's quotas with v; an empty v removes e.
func (m *Manager) Set(e Entity, v Values) {
	for {
		old := m.configs.Load()
		cp := make(map[Entity]Values, len(*old)+1)
		for k, vv := range *old {
			cp[k] = vv
		}
		if len(v) == 0 {
			delete(cp, e)
		} else {
			cp[e] = copyValues(v)
		}
		if m.configs.CompareAndSwap(old, &cp) {
			return
		}
	}
}

// Any reports whether some entity has some quota: one atomic load, for
// the hot paths to skip measuring (and reading the clock) while no quota
// is configured. A quota set meanwhile applies from the next request.
func (m *Manager) Any() bool { return len(*m.configs.Load()) > 0 }

// Enabled reports whether some entity has a quota of type t; a handler may
// skip measuring what no quota limits.
func (m *Manager) Enabled(t Type) bool {
	key := t.Key()
	for _, v := range *m.configs.Load() {
		if _, ok := v[key]; ok {
			return true
		}
	}
	return false
}

func copyValues(v Values) Values {
	cp := make(Values, len(v))
	for k, x := range v {
		cp[k] = x
	}
	return cp
}

// Resolve returns the quota of type t that applies to user and clientID,
// with Kafka's precedence (the most specific entity with a quota of t
// wins), and the entity it comes from; ok is false when none applies.
func (m *Manager) Resolve(t Type, user, clientID string) (limit float64, from Entity, ok bool) {
	return resolveIn(*m.configs.Load(), t, user, clientID)
}

// resolveIn is Resolve in configs, one snapshot of the configurations.
func resolveIn(configs map[Entity]Values, t Type, user, clientID string) (limit float64, from Entity, ok bool) {
	if len(configs) == 0 {
		return 0, Entity{}, false
	}
	key := t.Key()
	for _, e := range precedence(user, clientID) {
		if v, ok := configs[e][key]; ok {
			return v, e, true
		}
	}
	return 0, Entity{}, false
}

// Record adds value (bytes, or for Request the handler time in
// percent-seconds, see RecordTime) to the rate that t's quota for user and
// clientID is measured on, and returns how long the client must then be
// throttled: zero while the rate is within the quota, else Kafka's
// (rate-quota)/quota times the span the rate is measured over. Nothing is
// recorded when no quota applies.
func (m *Manager) Record(t Type, user, clientID string, value float64, now time.Time) time.Duration {
	limit, from, ok := m.Resolve(t, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recordLocked(t, resolvedOf(limit, from, ok), user, clientID, value, now)
}

// recordLocked is Record against the quota q of t (found: q.ok).
// REQUIRES: m.mu held.
func (m *Manager) recordLocked(t Type, q resolved, user, clientID string, value float64, now time.Time) time.Duration {
	k := q.sensor(t, user, clientID)
	m.sweepLocked(now)
	r := m.mu.rates[k]
	if r == nil {
		r = newRate(m.cfg)
		m.mu.rates[k] = r
	}
	r.record(m.cfg, value, now)
	observed, span := r.measure(m.cfg, now)
	d := throttleTime(observed, q.limit, span)
	if t == Request {
		// Kafka's ClientRequestQuotaManager bounds a request-time throttle
		// to one window: handler time comes in small amounts.
		d = min(d, m.cfg.Window)
	}
	m.observe(t, d)
	return d
}

func (m *Manager) observe(t Type, d time.Duration) {
	if d > 0 && m.cfg.OnThrottle != nil {
		m.cfg.OnThrottle(t, d)
	}
}

// Unrecord takes back value recorded at now (Kafka's unrecordQuotaSensor:
// a throttled fetch answers no records, so its bytes do not count).
func (m *Manager) Unrecord(t Type, user, clientID string, value float64, now time.Time) {
	_, from, ok := m.Resolve(t, user, clientID)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.mu.rates[sensorFor(t, from, user, clientID)]; r != nil {
		r.record(m.cfg, -value, now)
	}
}

// Throttled returns how long user and clientID would be throttled at now
// for t without recording anything: non-zero when their rate is already
// over the quota. A handler checks it before work that it would otherwise
// do and record (a cold read from the bucket), and throttles the request
// when it is non-zero (so it counts as a throttle for OnThrottle).
func (m *Manager) Throttled(t Type, user, clientID string, now time.Time) time.Duration {
	limit, from, ok := m.Resolve(t, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.throttledLocked(t, resolvedOf(limit, from, ok), user, clientID, now)
}

// throttledLocked is Throttled against the quota q of t (found: q.ok).
// REQUIRES: m.mu held.
func (m *Manager) throttledLocked(t Type, q resolved, user, clientID string, now time.Time) time.Duration {
	r := m.mu.rates[q.sensor(t, user, clientID)]
	if r == nil {
		return 0
	}
	observed, span := r.measure(m.cfg, now)
	d := throttleTime(observed, q.limit, span)
	m.observe(t, d)
	return d
}

// Rate returns the rate per second of t measured for user and clientID at
// now, and the quota it is measured against; ok is false when no quota
// applies.
func (m *Manager) Rate(t Type, user, clientID string, now time.Time) (perSecond, limit float64, ok bool) {
	limit, from, ok := m.Resolve(t, user, clientID)
	if !ok {
		return 0, 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.mu.rates[sensorFor(t, from, user, clientID)]
	if r == nil {
		return 0, limit, true
	}
	perSecond, _ = r.measure(m.cfg, now)
	return perSecond, limit, true
}

// PerWindow is one window's worth of t's quota for user and clientID
// (+Inf when no quota applies), what Shale lets one fetch response carry.
// Kafka lets one carry Samples-1 windows' worth (maxValueInQuotaWindow);
// since a fetch that would go over its quota is answered without records
// and retried after the throttle, a response of one window wastes at most
// one window of the consumer's rate where one of ten may waste a second
// span's worth.
func (m *Manager) PerWindow(t Type, user, clientID string) float64 {
	limit, _, ok := m.Resolve(t, user, clientID)
	if !ok {
		return math.Inf(1)
	}
	return limit * m.cfg.Window.Seconds()
}

// RecordTime records d of handler time for Request (KIP-124: the
// percentage of one handler, so a second of handler time in a second is
// 100) and returns the throttle time.
func (m *Manager) RecordTime(user, clientID string, d time.Duration, now time.Time) time.Duration {
	return m.Record(Request, user, clientID, d.Seconds()*100, now)
}

// sweepLocked drops, at most once a minute, the rates nobody recorded on
// for idleExpiry. REQUIRES: m.mu held.
func (m *Manager) sweepLocked(now time.Time) {
	if now.Sub(m.mu.lastSweep) < time.Minute {
		return
	}
	m.mu.lastSweep = now
	for k, r := range m.mu.rates {
		if now.Sub(r.lastStart()) >= idleExpiry {
			delete(m.mu.rates, k)
		}
	}
}
