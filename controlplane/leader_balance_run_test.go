package controlplane

import (
	"testing"
	"time"
)

// TestControllerBalancesLeadersButNotToShuttingDown runs the controller's
// preferred-leader pass on a real NATS server: partition 1 (preferred 3,
// led by 2) goes back to node 3, and in the same passes partition 0
// (preferred 1, led by 2) stays with node 2, because node 1 marked its
// registration as in controlled shutdown.
func TestControllerBalancesLeadersButNotToShuttingDown(t *testing.T) {
	srv := startNATS(t)
	cfg := StoreConfig{BrokerTTL: 2 * time.Second, KeepaliveInterval: 300 * time.Millisecond, Logger: quietLogger()}
	stores := registeredStores(t, srv, cfg, 3)
	ctrlStore := stores[2]
	if err := stores[0].BeginControlledShutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the controller's node sees node 1 shutting down", func() bool {
		for _, b := range ctrlStore.Brokers() {
			if b.NodeID == 1 {
				return b.ControlledShutdown
			}
		}
		return false
	})
	if _, err := ctrlStore.CreateTopicWithAssignment(testCtx(t), "pl", [][]int32{{1, 2, 3}, {3, 2, 1}}, nil); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		var st PartitionState
		eventually(t, 10*time.Second, "partition created", func() bool {
			var ok bool
			st, ok = ctrlStore.Partition("pl", p)
			return ok
		})
		st.Leader, st.LeaderEpoch = 2, st.LeaderEpoch+1
		if _, err := ctrlStore.UpdatePartition(testCtx(t), st); err != nil {
			t.Fatal(err)
		}
	}
	c, err := StartController(testCtx(t), ctrlStore, ControllerConfig{NodeID: 3, LeaseTTL: time.Second, Logger: quietLogger(),
		AutoLeaderRebalance: true, LeaderImbalanceCheckInterval: time.Second, LeaderImbalancePerBrokerPercentage: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	eventually(t, 20*time.Second, "partition 1 back on its preferred leader 3", func() bool {
		st, _ := ctrlStore.Partition("pl", 1)
		return st.Leader == 3
	})
	if st, _ := ctrlStore.Partition("pl", 0); st.Leader != 2 {
		t.Fatalf("partition 0 moved to %d while its preferred leader 1 was in controlled shutdown", st.Leader)
	}
}
