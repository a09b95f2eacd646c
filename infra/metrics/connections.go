package metrics

import "github.com/prometheus/client_golang/prometheus"

// connSeries are Kafka's socket-server-metrics of connections, per
// listener, and the refusals of its connection quotas.
type connSeries struct {
	count           *prometheus.GaugeVec
	created, closed *prometheus.CounterVec
	rejected        *prometheus.CounterVec
}

func newConnSeries(reg *registerer) *connSeries {
	s := &connSeries{
		count: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafka_server_socketservermetrics_connection_count",
			Help: "Open Kafka connections, per listener (Kafka connection-count)."}, []string{"listener"}),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_socketservermetrics_connection_creation_total",
			Help: "Kafka connections accepted, per listener (Kafka connection-creation-total); refused ones are not counted."}, []string{"listener"}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_socketservermetrics_connection_close_total",
			Help: "Kafka connections closed, per listener (Kafka connection-close-total)."}, []string{"listener"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shale_network_connections_rejected_total",
			Help: "Kafka connections closed at accept because they were over max_connections or max_connections_per_ip, per listener and reason (max_connections, max_connections_per_ip)."},
			[]string{"listener", "reason"}),
	}
	reg.MustRegister(s.count, s.created, s.closed, s.rejected)
	return s
}

// ObserveConnectionOpened counts an accepted connection (it makes the
// Registry a kafka.ConnObserver).
func (r *Registry) ObserveConnectionOpened(listener string) {
	if r == nil {
		return
	}
	r.conn.created.WithLabelValues(listener).Inc()
	r.conn.count.WithLabelValues(listener).Inc()
}

// ObserveConnectionClosed counts a closed connection.
func (r *Registry) ObserveConnectionClosed(listener string) {
	if r == nil {
		return
	}
	r.conn.closed.WithLabelValues(listener).Inc()
	r.conn.count.WithLabelValues(listener).Dec()
}

// ObserveConnectionRejected counts a connection refused at accept.
func (r *Registry) ObserveConnectionRejected(listener, reason string) {
	if r == nil {
		return
	}
	r.conn.rejected.WithLabelValues(listener, reason).Inc()
}
