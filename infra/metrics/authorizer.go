package metrics

import "github.com/prometheus/client_golang/prometheus"

// authorizerSeries are the authorizer's series, Kafka's authorizer-metrics.
type authorizerSeries struct {
	denied *prometheus.CounterVec
}

func (r *Registry) newAuthorizerSeries() authorizerSeries {
	return authorizerSeries{denied: r.counterVec("kafka_security_authorizer_authorization_denied_total",
		"Authorization checks denied that the client was told of, per API, operation and resource type "+
			"(Kafka's authorizer-metrics authorization-denied-rate-per-minute).", "request", "operation", "resource_type")}
}

// AuthorizationDenied counts one denied check of api's request for
// operation on a resource of resourceType (Kafka's names: READ, TOPIC).
func (r *Registry) AuthorizationDenied(api, operation, resourceType string) {
	if r == nil {
		return
	}
	r.authorizer.denied.WithLabelValues(api, operation, resourceType).Inc()
}
