package quota

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestLimitsAnswerAsTheManager: a request's Limits bound, check and record
// as the Manager's per-call methods do, on the same rates (the same
// throttle times and OnThrottle reports, call by call).
func TestLimitsAnswerAsTheManager(t *testing.T) {
	type throttle struct {
		t Type
		d time.Duration
	}
	var viaLimits, viaCalls []throttle
	newMgr := func(seen *[]throttle) *Manager {
		m := NewManager(Config{OnThrottle: func(t Type, d time.Duration) { *seen = append(*seen, throttle{t, d}) }})
		m.SetAll(map[Entity]Values{
			{User: Named("alice")}:    {KeyConsumerByteRate: 100},
			{ClientID: DefaultName()}: {KeyRemoteFetchByteRate: 50, KeyConsumerByteRate: 1000},
		})
		return m
	}
	a, b := newMgr(&viaLimits), newMgr(&viaCalls)
	for i, step := range []struct{ fetch, remote float64 }{{900, 0}, {200, 400}, {0, 300}, {50, 0}, {10, 300}, {0, 200}} {
		now := t0.Add(time.Duration(i) * 700 * time.Millisecond)
		// Two clients of alice: her fetch quota's rate is hers (shared),
		// the client default's remote fetch rate is each client's.
		client := []string{"app", "app2"}[i%2]
		l, ok := a.Limits("alice", client)
		if !ok {
			t.Fatal("Limits: no quota")
		}
		for _, ty := range []Type{Fetch, RemoteFetch, Produce} {
			if got, want := l.PerWindow(ty), b.PerWindow(ty, "alice", client); got != want {
				t.Fatalf("step %d: PerWindow(%v) %v, the manager's %v", i, ty, got, want)
			}
		}
		if got, want := a.ThrottledFor(&l, RemoteFetch, now), b.Throttled(RemoteFetch, "alice", client, now); got != want {
			t.Fatalf("step %d: ThrottledFor %v, Throttled %v", i, got, want)
		}
		if step.remote > 0 {
			if got, want := a.RecordFor(&l, RemoteFetch, step.remote, now), b.Record(RemoteFetch, "alice", client, step.remote, now); got != want {
				t.Fatalf("step %d: RecordFor(RemoteFetch) %v, Record %v", i, got, want)
			}
		}
		if got, want := a.RecordFor(&l, Fetch, step.fetch, now), b.Record(Fetch, "alice", client, step.fetch, now); got != want {
			t.Fatalf("step %d: RecordFor(Fetch) %v, Record %v", i, got, want)
		}
	}
	if len(viaCalls) == 0 {
		t.Fatal("the steps throttled nothing: they test nothing")
	}
	if !slices.Equal(viaLimits, viaCalls) {
		t.Fatalf("OnThrottle via Limits %v, via the manager's calls %v", viaLimits, viaCalls)
	}
}

// TestLimitsAreOneSnapshot: a request's Limits keep the quotas of the
// moment they were taken; a quota set or removed afterwards applies from
// the next request's Limits. With no quota at all there is nothing to
// take.
func TestLimitsAreOneSnapshot(t *testing.T) {
	m := NewManager(Config{})
	if _, ok := m.Limits("u", "c"); ok {
		t.Fatal("Limits with no quota configured")
	}
	m.Set(Entity{User: Named("u")}, Values{KeyConsumerByteRate: 100})
	l, ok := m.Limits("u", "c")
	if !ok {
		t.Fatal("no Limits with a quota configured")
	}
	m.Set(Entity{User: Named("u")}, nil)
	m.Set(Entity{ClientID: Named("c")}, Values{KeyRemoteFetchByteRate: 10})
	if got := l.PerWindow(Fetch); got != 100 {
		t.Fatalf("fetch per window %v after the quota's removal, want the request's 100", got)
	}
	if got := l.PerWindow(RemoteFetch); !math.IsInf(got, 1) {
		t.Fatalf("remote fetch per window %v, want +Inf: set after the request's Limits", got)
	}
	if d := m.RecordFor(&l, RemoteFetch, 1000, t0); d != 0 {
		t.Fatalf("throttled %v by a quota set after the request's Limits", d)
	}
	next, _ := m.Limits("u", "c")
	if got := next.PerWindow(RemoteFetch); got != 10 {
		t.Fatalf("the next request's remote fetch per window %v, want 10", got)
	}
	if got := next.PerWindow(Fetch); !math.IsInf(got, 1) {
		t.Fatalf("the next request's fetch per window %v, want +Inf", got)
	}
}

// TestLimitsMeasureOnTheEntitysRate: a quota from the user default is
// measured on a rate of each user, shared by the user's clients; one from
// the client id default on a rate of each client id.
func TestLimitsMeasureOnTheEntitysRate(t *testing.T) {
	m := NewManager(Config{})
	m.SetAll(map[Entity]Values{
		{User: DefaultName()}:     {KeyConsumerByteRate: 100},
		{ClientID: DefaultName()}: {KeyRemoteFetchByteRate: 100},
	})
	limits := func(user, client string) *Limits {
		l, ok := m.Limits(user, client)
		if !ok {
			t.Fatal("no Limits")
		}
		return &l
	}
	// 10 windows of span at 100 B/s: 1000 bytes is exactly the quota.
	for _, client := range []string{"a1", "a2"} {
		if d := m.RecordFor(limits("alice", client), RemoteFetch, 1000, t0); d != 0 {
			t.Fatalf("%s's cold reads at quota throttled %v: each client id has its own rate", client, d)
		}
	}
	if d := m.RecordFor(limits("alice", "a1"), Fetch, 1000, t0); d != 0 {
		t.Fatalf("a1's fetch at quota throttled %v", d)
	}
	if d := m.RecordFor(limits("alice", "a2"), Fetch, 100, t0); d == 0 {
		t.Fatal("a2's fetch not throttled: alice's clients share her rate")
	}
	if d := m.RecordFor(limits("bob", "a1"), Fetch, 1000, t0); d != 0 {
		t.Fatalf("bob's fetch at quota throttled %v: each user has a rate", d)
	}
}
