package metrics

import "github.com/prometheus/client_golang/prometheus"

// authSeries are Kafka's socket-server-metrics of authentication, per
// listener and SASL mechanism.
type authSeries struct {
	ok, failed             *prometheus.CounterVec
	reauthOK, reauthFailed *prometheus.CounterVec
	expired                *prometheus.CounterVec
}

func newAuthSeries(reg *registerer) *authSeries {
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_socketservermetrics_" + name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	return &authSeries{
		ok: vec("successful_authentication_total",
			"SASL authentications that succeeded, per listener and mechanism (Kafka successful-authentication-total).", "listener", "mechanism"),
		failed: vec("failed_authentication_total",
			"SASL authentications that failed (bad credentials, a malformed exchange, an unsupported mechanism: mechanism \"\"), per listener and mechanism (Kafka failed-authentication-total).", "listener", "mechanism"),
		reauthOK: vec("successful_reauthentication_total",
			"SASL re-authentications (KIP-368) that succeeded, per listener and mechanism (Kafka successful-reauthentication-total).", "listener", "mechanism"),
		reauthFailed: vec("failed_reauthentication_total",
			"SASL re-authentications that failed, a changed principal included, per listener and mechanism (Kafka failed-reauthentication-total).", "listener", "mechanism"),
		expired: vec("expired_connections_killed_total",
			"Connections closed because their SASL session ended without a re-authentication, per listener (Kafka expired-connections-killed-count).", "listener"),
	}
}

// ObserveAuthentication counts one SASL authentication's outcome (it makes
// the Registry a kafka.AuthObserver).
func (r *Registry) ObserveAuthentication(listener, mechanism string, reauth bool, err error) {
	if r == nil {
		return
	}
	v := r.auth.ok
	switch {
	case reauth && err != nil:
		v = r.auth.reauthFailed
	case reauth:
		v = r.auth.reauthOK
	case err != nil:
		v = r.auth.failed
	}
	v.WithLabelValues(listener, mechanism).Inc()
}

// ObserveExpiredSession counts a connection closed because its SASL session
// expired.
func (r *Registry) ObserveExpiredSession(listener string) {
	if r == nil {
		return
	}
	r.auth.expired.WithLabelValues(listener).Inc()
}
