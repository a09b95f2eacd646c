package controlplane

import (
	"slices"
	"sync"
	"time"
)

// A control plane that is away for everyone must not cost anyone their
// leadership (issue 24 item 3). When a paused or partitioned NATS cluster
// comes back, the broker keys' TTLs have run out for every broker at once
// (the servers expire them by their message timestamps), although no
// broker stopped renewing them by choice: the renewals had nowhere to
// go. A controller that elected away from every broker whose key is gone
// would fence them all for the outage itself.
//
// So the controller watches its own round trips to the control plane
// (the lease's renewal, or a candidate's attempt to take it) and its own
// broker keepalive (a round trip counts as failed while that is impaired:
// the brokers bucket's stream may have lost its leader while the lease's
// has not). While they fail, the brokers that were live at the last
// success count as live (a controller does not fence anyone on a view it
// cannot refresh). When the first one to succeed after failures comes
// more than a keepalive interval after the last success, the controller's
// own view had a gap at least that long, and so may every broker's
// renewals: every broker that was live in its view at the last success
// before the gap gets a fresh session grace, as if it had renewed at that
// moment. A broker that
// is alive renews within the grace (its keepalive retries until it
// does) and is live again by its own key; one that really died during
// the gap does not, and is taken for dead when the grace ends, a broker
// session after the control plane returned (or earlier, on the liveness
// probe's proof that its process is gone). A controller that had no gap
// (another node's lease expired, one NATS server was lost but its round
// trips went on) grants nothing: fast failover stays fast.

// sessionGrace is the controller's record of its round trips and the
// graces granted. Safe for concurrent use (the controller loop writes,
// the liveness prober revokes).
type sessionGrace struct {
	mu      sync.Mutex
	lastOK  time.Time      // start of the last successful round trip
	failed  bool           // a round trip failed since lastOK
	liveAt  map[int32]bool // brokers live (by key or grace) at lastOK
	until   time.Time      // the grace's end
	granted map[int32]bool // the brokers graced until then
}

// observe records a round trip started at start, and whether it
// succeeded; live is every broker with a key in the cache now. It returns
// the brokers granted a grace, sorted, when this success ends a gap longer
// than gap; the grace lasts session from now.
func (g *sessionGrace) observe(start, now time.Time, ok bool, live []int32, gap, session time.Duration) []int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !ok {
		g.failed = true
		return nil
	}
	var out []int32
	if g.failed && !g.lastOK.IsZero() && start.Sub(g.lastOK) > gap {
		g.until, g.granted = now.Add(session), map[int32]bool{}
		for id := range g.liveAt {
			g.granted[id] = true
			out = append(out, id)
		}
		slices.Sort(out)
	}
	g.lastOK, g.failed = start, false
	g.liveAt = map[int32]bool{}
	for _, id := range live {
		g.liveAt[id] = true
	}
	if now.Before(g.until) {
		for id := range g.granted {
			g.liveAt[id] = true
		}
	}
	return out
}

// graced reports whether broker id is within a grace at now (grantedIDs).
func (g *sessionGrace) graced(now time.Time, id int32) bool {
	return slices.Contains(g.grantedIDs(now), id)
}

// grantedIDs returns the brokers within a grace at now: those granted one
// after a gap, and while round trips are failing those live at the last
// success.
func (g *sessionGrace) grantedIDs(now time.Time) []int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := map[int32]bool{}
	if now.Before(g.until) {
		for id := range g.granted {
			ids[id] = true
		}
	}
	if g.failed {
		for id := range g.liveAt {
			ids[id] = true
		}
	}
	out := make([]int32, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// revoke ends broker id's grace (its process is proven gone).
func (g *sessionGrace) revoke(id int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.granted, id)
	delete(g.liveAt, id)
}
