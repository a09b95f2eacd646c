package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// balancerSeries are the controller's replica balancer's: set on the node
// that holds the controller lease at each balancer pass (another node's
// are those of its last pass as controller, or absent).
type balancerSeries struct {
	planned, running, skew, balanceSeconds prometheus.Gauge
	started                                *prometheus.CounterVec
	finished, bytes                        prometheus.Counter
	replicas, leaders                      *prometheus.GaugeVec
}

func newBalancerSeries(reg *registerer) *balancerSeries {
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	gaugeVec := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"broker"})
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	started := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shale_balancer_moves_started_total",
		Help: "Balancer moves written, per kind: leader (off a draining broker), drain, skew, preferred (a reorder)."}, []string{"kind"})
	reg.MustRegister(started)
	return &balancerSeries{
		planned: gauge("shale_balancer_moves_planned",
			"Moves the last balancer pass planned, with those it left for later passes by balancer_max_moves."),
		running: gauge("shale_balancer_moves_running",
			"Reassignments in progress at the last balancer pass (the balancer's and any other)."),
		skew: gauge("shale_balancer_replica_skew",
			"Replicas of the most loaded host minus those of the least loaded, at the last balancer pass."),
		balanceSeconds: gauge("shale_balancer_time_to_balance_seconds",
			"How long the last imbalance (a broker joining, a drain, skew) took to be balanced, from the first pass that saw it."),
		started: started,
		finished: counter("shale_balancer_moves_finished_total",
			"Reassignments the controller saw complete between balancer passes."),
		bytes: counter("shale_balancer_bytes_moved_total",
			"Estimated bytes the started balancer moves copy (the local tail of each partition moved; unknown sizes count 0)."),
		replicas: gaugeVec("shale_balancer_broker_replicas",
			"Replicas per broker at the last balancer pass, counting reassignments in progress as done."),
		leaders: gaugeVec("shale_balancer_broker_leaders", "Partitions led per broker at the last balancer pass."),
	}
}

// BalancerPass is one balancer pass, as the controller reports it.
type BalancerPass struct {
	// Planned and Running are the pass's planned (and pending) moves and
	// the reassignments in progress.
	Planned, Running, Skew int
	// Started counts the moves written, per kind; Finished the
	// reassignments seen complete; Bytes the started moves' estimate.
	Started  map[string]int
	Finished int
	Bytes    int64
	// Brokers holds each broker's replica and leader counts.
	Brokers []BrokerLoad
	// BalancedAfter, when not zero, is how long the imbalance the pass saw
	// end took.
	BalancedAfter time.Duration
}

// BrokerLoad is one broker's share in a BalancerPass.
type BrokerLoad struct {
	Broker            int32
	Replicas, Leaders int
}

// ObserveBalancerPass records one balancer pass.
func (r *Registry) ObserveBalancerPass(p BalancerPass) {
	if r == nil {
		return
	}
	b := r.balancer
	b.planned.Set(float64(p.Planned))
	b.running.Set(float64(p.Running))
	b.skew.Set(float64(p.Skew))
	for kind, n := range p.Started {
		b.started.WithLabelValues(kind).Add(float64(n))
	}
	b.finished.Add(float64(p.Finished))
	b.bytes.Add(float64(max(p.Bytes, 0)))
	b.replicas.Reset()
	b.leaders.Reset()
	for _, l := range p.Brokers {
		id := strconv.FormatInt(int64(l.Broker), 10)
		b.replicas.WithLabelValues(id).Set(float64(l.Replicas))
		b.leaders.WithLabelValues(id).Set(float64(l.Leaders))
	}
	if p.BalancedAfter > 0 {
		b.balanceSeconds.Set(p.BalancedAfter.Seconds())
	}
}
