package share

import (
	"testing"

	"github.com/shale-io/shale/coordinator"
)

// TestGroupSettings: a share group's configs (Config.GroupConfig) replace
// the node's session, interval, lock duration, delivery limit, reset
// position and isolation level (read_uncommitted unless the group says
// read_committed); what a group does not set, or a group without configs, keeps
// the node's; the in-flight bound stays the node's.
func TestGroupSettings(t *testing.T) {
	cfg := Config{SessionTimeoutMs: 45000, HeartbeatIntervalMs: 5000, AutoOffsetReset: "latest",
		Limits: Limits{LockDurationMs: 30000, DeliveryLimit: 5, MaxInFlight: 2000},
		GroupConfig: func(g string) coordinator.GroupConfig {
			if g != "g" {
				return coordinator.GroupConfig{}
			}
			return coordinator.GroupConfig{ShareSessionTimeoutMs: 50000, ShareHeartbeatIntervalMs: 6000,
				ShareRecordLockDurationMs: 2000, ShareDeliveryCountLimit: 2, ShareAutoOffsetReset: "earliest",
				ShareIsolationLevel: "read_committed"}
		}}
	cfg.setDefaults()
	want := groupSettings{50000, 6000, Limits{LockDurationMs: 2000, DeliveryLimit: 2, MaxInFlight: 2000}, "earliest", true}
	if got := cfg.group("g"); got != want {
		t.Fatalf("group g: %+v, want %+v", got, want)
	}
	node := groupSettings{45000, 5000, Limits{LockDurationMs: 30000, DeliveryLimit: 5, MaxInFlight: 2000}, "latest", false}
	if got := cfg.group("other"); got != node {
		t.Fatalf("a group without configs: %+v, want the node's %+v", got, node)
	}
	cfg.GroupConfig = nil
	if got := cfg.group("g"); got != node {
		t.Fatalf("no GroupConfig: %+v", got)
	}
}
