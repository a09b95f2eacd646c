package quota

import (
	"math"
	"time"
)

// Limits are the quotas that apply to one user and client id, taken from
// one snapshot of the configurations (Manager.Limits) for one request: a
// handler that bounds, checks and records several quotas of a request
// resolves each once, and a quota set or removed meanwhile applies from
// the next request (as Any's answer does). Each type is resolved, with
// Resolve's precedence, the first time it is asked for. Not safe for
// concurrent use; the Manager calls that take it are.
type Limits struct {
	configs        map[Entity]Values
	user, clientID string
	window         time.Duration
	of             [numTypes]resolved
}

// resolved is one type's quota as Resolve finds it: its limit, and
// whether the entity it comes from names (or defaults) the user and the
// client id, which is all its rate's sensorKey needs of that entity; done
// is set once it was looked up.
type resolved struct {
	limit              float64
	byUser, byClientID bool
	ok, done           bool
}

// resolvedOf is the resolved form of Resolve's answer.
func resolvedOf(limit float64, from Entity, ok bool) resolved {
	return resolved{limit: limit, byUser: from.User.Set, byClientID: from.ClientID.Set, ok: ok, done: true}
}

// sensor is the key of the rate that q, t's quota for user and clientID,
// is measured on (sensorFor).
func (q resolved) sensor(t Type, user, clientID string) sensorKey {
	k := sensorKey{typ: t}
	if q.byUser {
		k.user = user
	}
	if q.byClientID {
		k.clientID = clientID
	}
	return k
}

// Limits takes the quotas that apply to user and clientID for one
// request; ok is false while no quota is configured at all (Any), when
// the request has nothing to measure.
func (m *Manager) Limits(user, clientID string) (l Limits, ok bool) {
	configs := *m.configs.Load()
	if len(configs) == 0 {
		return Limits{}, false
	}
	return Limits{configs: configs, user: user, clientID: clientID, window: m.cfg.Window}, true
}

// get returns t's quota, resolving it the first time.
func (l *Limits) get(t Type) resolved {
	r := &l.of[t]
	if !r.done {
		*r = resolvedOf(resolveIn(l.configs, t, l.user, l.clientID))
	}
	return *r
}

// PerWindow is Manager.PerWindow for l's quota of t: one window's worth,
// +Inf when none applies.
func (l *Limits) PerWindow(t Type) float64 {
	r := l.get(t)
	if !r.ok {
		return math.Inf(1)
	}
	return r.limit * l.window.Seconds()
}

// ThrottledFor is Manager.Throttled for l's quota of t.
func (m *Manager) ThrottledFor(l *Limits, t Type, now time.Time) time.Duration {
	r := l.get(t)
	if !r.ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.throttledLocked(t, r, l.user, l.clientID, now)
}

// RecordFor is Manager.Record of value against l's quota of t.
func (m *Manager) RecordFor(l *Limits, t Type, value float64, now time.Time) time.Duration {
	r := l.get(t)
	if !r.ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recordLocked(t, r, l.user, l.clientID, value, now)
}
