package group

import (
	"testing"
	"time"

	"github.com/shale-io/shale/coordinator"
)

// TestConsumerGroupConfigs: a group's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms (Config.GroupConfig) are the session the
// next heartbeat starts and the interval it answers; a change applies to
// the heartbeat after it; another group keeps the node's.
func TestConsumerGroupConfigs(t *testing.T) {
	configs := map[string]coordinator.GroupConfig{"g": {ConsumerSessionTimeoutMs: 50000, ConsumerHeartbeatIntervalMs: 7000}}
	cfg := &Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, ConsumerSessionTimeout: 10 * time.Second,
		ConsumerHeartbeatInterval: time.Second, GroupConfig: func(g string) coordinator.GroupConfig { return configs[g] }}
	g := newGroup("g", cfg, func([]record) (int64, error) { return 0, nil })
	g.now = time.Unix(100, 0)
	join := consumerHeartbeat{memberID: "m1", rebalanceTimeoutMs: 5000, subscribedTopics: []string{"a"}, owned: assignment{}}
	r, code := g.testHeartbeat(t, join)
	if code != 0 || r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("join: code %d, interval %d, want 7000", code, r.HeartbeatIntervalMillis)
	}
	if got := g.consumer.members["m1"].expiresAt; !got.Equal(g.now.Add(50 * time.Second)) {
		t.Fatalf("session ends at %v, want now+50s", got.Sub(g.now))
	}
	configs["g"] = coordinator.GroupConfig{ConsumerSessionTimeoutMs: 45000, ConsumerHeartbeatIntervalMs: 9000}
	g.now = g.now.Add(time.Second)
	r, _ = g.testHeartbeat(t, consumerHeartbeat{memberID: "m1", memberEpoch: r.MemberEpoch, rebalanceTimeoutMs: -1, owned: owned(r.Assignment)})
	if r.HeartbeatIntervalMillis != 9000 || !g.consumer.members["m1"].expiresAt.Equal(g.now.Add(45*time.Second)) {
		t.Fatalf("after the change: interval %d, session %v", r.HeartbeatIntervalMillis, g.consumer.members["m1"].expiresAt.Sub(g.now))
	}
	other := newGroup("other", cfg, func([]record) (int64, error) { return 0, nil })
	other.now = g.now
	if r, _ := other.testHeartbeat(t, join); r.HeartbeatIntervalMillis != 1000 ||
		!other.consumer.members["m1"].expiresAt.Equal(other.now.Add(10*time.Second)) {
		t.Fatalf("a group without configs: interval %d", r.HeartbeatIntervalMillis)
	}
}
