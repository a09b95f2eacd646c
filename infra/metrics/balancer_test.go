package metrics

import (
	"testing"
	"time"
)

func TestBalancerSeries(t *testing.T) {
	r := New(nil)
	r.ObserveBalancerPass(BalancerPass{Planned: 5, Running: 2, Skew: 4, Started: map[string]int{"drain": 2, "leader": 1},
		Bytes: 1000, Brokers: []BrokerLoad{{Broker: 1, Replicas: 10, Leaders: 4}, {Broker: 4, Replicas: 2}}})
	r.ObserveBalancerPass(BalancerPass{Planned: 0, Running: 0, Skew: 1, Started: map[string]int{"drain": 1}, Finished: 3,
		Bytes: 500, Brokers: []BrokerLoad{{Broker: 1, Replicas: 7, Leaders: 3}}, BalancedAfter: 1500 * time.Millisecond})
	f := scrape(t, r.Handler())
	want(t, f, 0, "shale_balancer_moves_planned")
	want(t, f, 0, "shale_balancer_moves_running")
	want(t, f, 1, "shale_balancer_replica_skew")
	want(t, f, 3, "shale_balancer_moves_started_total", "kind", "drain")
	want(t, f, 1, "shale_balancer_moves_started_total", "kind", "leader")
	want(t, f, 3, "shale_balancer_moves_finished_total")
	want(t, f, 1500, "shale_balancer_bytes_moved_total")
	want(t, f, 7, "shale_balancer_broker_replicas", "broker", "1")
	want(t, f, 3, "shale_balancer_broker_leaders", "broker", "1")
	want(t, f, 1.5, "shale_balancer_time_to_balance_seconds")
	if _, ok := sample(f, "shale_balancer_broker_replicas", "broker", "4"); ok {
		t.Error("a broker gone from the last pass keeps its series")
	}
	var nilReg *Registry
	nilReg.ObserveBalancerPass(BalancerPass{})
}
