package quota

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestPrecedence(t *testing.T) {
	u, c, du, dc := Named("alice"), Named("app"), DefaultName(), DefaultName()
	all := []Entity{
		{User: u, ClientID: c}, {User: u, ClientID: dc}, {User: u},
		{User: du, ClientID: c}, {User: du, ClientID: dc}, {User: du},
		{ClientID: c}, {ClientID: dc},
	}
	// Removing the most specific entity, one at a time, hands the quota to
	// the next in Kafka's order.
	for i := range all {
		m := NewManager(Config{})
		cfg := map[Entity]Values{}
		for j, e := range all[i:] {
			cfg[e] = Values{KeyProducerByteRate: float64(1000 * (i + j + 1))}
		}
		m.SetAll(cfg)
		limit, from, ok := m.Resolve(Produce, "alice", "app")
		if !ok || from != all[i] || limit != float64(1000*(i+1)) {
			t.Errorf("with %v first: resolved %v %v %v", all[i], limit, from, ok)
		}
	}
	// Other users and clients do not match the named entities.
	m := NewManager(Config{})
	m.SetAll(map[Entity]Values{{User: u}: {KeyProducerByteRate: 1}, {ClientID: c}: {KeyProducerByteRate: 2}})
	for _, tc := range []struct {
		user, client string
		want         float64
		ok           bool
	}{
		{"alice", "other", 1, true},
		{"bob", "app", 2, true},
		{"bob", "other", 0, false},
	} {
		limit, _, ok := m.Resolve(Produce, tc.user, tc.client)
		if ok != tc.ok || limit != tc.want {
			t.Errorf("%s/%s: %v %v, want %v %v", tc.user, tc.client, limit, ok, tc.want, tc.ok)
		}
	}
	// Each type resolves on its own: a user's produce quota does not hide
	// the client default's fetch quota.
	m.SetAll(map[Entity]Values{{User: u}: {KeyProducerByteRate: 1}, {ClientID: dc}: {KeyConsumerByteRate: 5}})
	if limit, from, ok := m.Resolve(Fetch, "alice", "app"); !ok || limit != 5 || from != (Entity{ClientID: dc}) {
		t.Errorf("fetch for alice: %v %v %v", limit, from, ok)
	}
}

func TestSharedAndSeparateRates(t *testing.T) {
	// /users/alice: every client of alice shares one rate. /users/<default>:
	// each user has its own.
	m := NewManager(Config{})
	m.SetAll(map[Entity]Values{
		{User: Named("alice")}: {KeyProducerByteRate: 100},
		{User: DefaultName()}:  {KeyProducerByteRate: 100},
	})
	// 10 windows of span at 100 B/s: 1000 bytes is exactly the quota.
	if d := m.Record(Produce, "alice", "a1", 1000, t0); d != 0 {
		t.Fatalf("alice a1 at quota throttled %v", d)
	}
	if d := m.Record(Produce, "alice", "a2", 100, t0); d == 0 {
		t.Fatal("alice a2 not throttled: alice's clients should share a rate")
	}
	if d := m.Record(Produce, "bob", "b1", 1000, t0); d != 0 {
		t.Fatalf("bob throttled %v by alice's bytes", d)
	}
	if d := m.Record(Produce, "carol", "c1", 1000, t0); d != 0 {
		t.Fatalf("carol throttled %v: defaults are per user", d)
	}
}

func TestThrottleTime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bound  float64
		record []float64 // one per second from t0
		want   time.Duration
	}{
		// One burst on a fresh rate is measured over 10 windows (Kafka's
		// minimum span): 2000 B at 100 B/s is 200 B/s, 100% over, so the
		// client waits as long as the span again.
		{"burst", 100, []float64{2000}, 10 * time.Second},
		{"at quota", 100, []float64{1000}, 0},
		// 1500 B in 10 s span: 150 B/s, 50% over, 5 s.
		{"half over", 100, []float64{1500}, 5 * time.Second},
		// 11 s of 100 B/s then 110 more: spans grow to 10 s (the 11th
		// window is 10 s after the first) and sum 1210 over 10 s.
		{"steady then over", 100, []float64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 210}, 2100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(Config{})
			m.SetAll(map[Entity]Values{{ClientID: DefaultName()}: {KeyProducerByteRate: tc.bound}})
			var got time.Duration
			for i, v := range tc.record {
				got = m.Record(Produce, "u", "c", v, t0.Add(time.Duration(i)*time.Second))
			}
			if got != tc.want {
				t.Errorf("throttle %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRateForgetsOldWindows(t *testing.T) {
	m := NewManager(Config{})
	m.SetAll(map[Entity]Values{{ClientID: DefaultName()}: {KeyConsumerByteRate: 100}})
	if d := m.Record(Fetch, "", "c", 5000, t0); d == 0 {
		t.Fatal("burst not throttled")
	}
	// Waiting the throttle time brings the rate back to the quota.
	d := m.Throttled(Fetch, "", "c", t0)
	if d != 40*time.Second {
		t.Fatalf("throttled %v, want 40s", d)
	}
	// 10 s on, the burst is still in the windows: 500 B/s over 10 s.
	if d := m.Throttled(Fetch, "", "c", t0.Add(10*time.Second)); d != 40*time.Second {
		t.Fatalf("at 10 s throttled %v, want 40s", d)
	}
	// 11 windows later the burst is forgotten.
	if d := m.Throttled(Fetch, "", "c", t0.Add(11*time.Second)); d != 0 {
		t.Fatalf("still throttled %v after the windows expired", d)
	}
	if r, limit, ok := m.Rate(Fetch, "", "c", t0.Add(11*time.Second)); !ok || r != 0 || limit != 100 {
		t.Fatalf("rate %v limit %v ok %v", r, limit, ok)
	}
}

func TestUnrecord(t *testing.T) {
	m := NewManager(Config{})
	m.SetAll(map[Entity]Values{{User: DefaultName()}: {KeyConsumerByteRate: 100}})
	if d := m.Record(Fetch, "u", "c", 900, t0); d != 0 {
		t.Fatal(d)
	}
	if d := m.Record(Fetch, "u", "c", 900, t0); d == 0 {
		t.Fatal("not throttled")
	}
	m.Unrecord(Fetch, "u", "c", 900, t0)
	if d := m.Throttled(Fetch, "u", "c", t0); d != 0 {
		t.Fatalf("throttled %v after the unrecord", d)
	}
}

func TestRequestTimeIsBoundedToAWindow(t *testing.T) {
	m := NewManager(Config{})
	m.SetAll(map[Entity]Values{{User: Named("u")}: {KeyRequestPercentage: 10}})
	// 10% of one handler over a 10 s span is 1 s of handler time.
	if d := m.RecordTime("u", "c", time.Second, t0); d != 0 {
		t.Fatalf("at quota: %v", d)
	}
	if d := m.RecordTime("u", "c", 5*time.Second, t0); d != time.Second {
		t.Fatalf("request throttle %v, want one window", d)
	}
}

func TestNoQuotaNoRecord(t *testing.T) {
	m := NewManager(Config{})
	if m.Any() {
		t.Fatal("Any with no quota")
	}
	if d := m.Record(Produce, "u", "c", 1e12, t0); d != 0 {
		t.Fatal(d)
	}
	if !math.IsInf(m.PerWindow(Fetch, "u", "c"), 1) {
		t.Fatal("max in window bounded with no quota")
	}
	m.Set(Entity{User: Named("u")}, Values{KeyConsumerByteRate: 1000})
	if got := m.PerWindow(Fetch, "u", "c"); got != 1000 {
		t.Fatalf("per window %v, want 1000", got)
	}
	if !m.Enabled(Fetch) || m.Enabled(Produce) || !m.Any() {
		t.Fatal("Enabled")
	}
	m.Set(Entity{User: Named("u")}, nil)
	if m.Enabled(Fetch) || m.Any() {
		t.Fatal("removed quota still enabled")
	}
	m.SetAll(map[Entity]Values{{User: Named("u")}: {}})
	if m.Any() {
		t.Fatal("Any after SetAll of an empty entity")
	}
	m.SetAll(map[Entity]Values{{ClientID: DefaultName()}: {KeyRequestPercentage: 10}})
	if !m.Any() {
		t.Fatal("no Any after SetAll")
	}
}

func TestValidateValue(t *testing.T) {
	for _, tc := range []struct {
		key string
		v   float64
		ok  bool
	}{
		{KeyProducerByteRate, 1024, true},
		{KeyProducerByteRate, 10.5, false},
		{KeyConsumerByteRate, 0, false},
		{KeyRequestPercentage, 12.5, true},
		{KeyRequestPercentage, -1, false},
		{KeyRemoteFetchByteRate, 1 << 20, true},
		{KeyRemoteFetchByteRate, math.Inf(1), false},
		{"connection_creation_rate", 10, false},
		{"bogus", 1, false},
	} {
		if err := ValidateValue(tc.key, tc.v); (err == nil) != tc.ok {
			t.Errorf("%s=%v: %v", tc.key, tc.v, err)
		}
	}
}

func TestUserOf(t *testing.T) {
	for in, want := range map[string]string{"User:alice": "alice", "User:CN=app,O=x": "CN=app,O=x", "User:ANONYMOUS": "ANONYMOUS", "Group:x": "Group:x"} {
		if got := UserOf(in); got != want {
			t.Errorf("UserOf(%q) = %q", in, got)
		}
	}
}

func TestEntityString(t *testing.T) {
	e := Entity{User: Named("alice"), ClientID: DefaultName()}
	if got := e.String(); got != "users/alice/clients/<default>" {
		t.Fatal(got)
	}
	if (Entity{}).Validate() == nil {
		t.Fatal("empty entity valid")
	}
}

func TestOnThrottle(t *testing.T) {
	var got []time.Duration
	m := NewManager(Config{OnThrottle: func(typ Type, d time.Duration) {
		if typ != Produce {
			t.Errorf("type %v", typ)
		}
		got = append(got, d)
	}})
	m.SetAll(map[Entity]Values{{ClientID: DefaultName()}: {KeyProducerByteRate: 100}})
	m.Record(Produce, "u", "c", 1000, t0) // at quota: no throttle
	m.Record(Produce, "u", "c", 500, t0)  // 50% over: 5 s
	m.Throttled(Produce, "u", "c", t0)    // still 5 s
	if len(got) != 2 || got[0] != 5*time.Second || got[1] != 5*time.Second {
		t.Fatalf("observed %v", got)
	}
}
