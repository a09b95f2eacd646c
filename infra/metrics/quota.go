package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// quotaSeries count the throttles of client quotas, per quota type
// (Kafka's Produce, Fetch and Request quota managers, and Shale's
// RemoteFetch). Kafka keeps a throttle-time average per user and client
// id; these are per type only, so that a cluster of many client ids does
// not grow a series for each.
type quotaSeries struct {
	throttled, seconds *prometheus.CounterVec
}

func newQuotaSeries(reg *registerer) *quotaSeries {
	vec := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"quota_type"})
		reg.MustRegister(c)
		return c
	}
	return &quotaSeries{
		throttled: vec("kafka_server_quota_throttled_requests_total",
			"Requests throttled by a client quota, per quota type (Produce, Fetch, Request, RemoteFetch)."),
		seconds: vec("kafka_server_quota_throttle_time_seconds_total",
			"Throttle time handed to clients over a quota, per quota type (Kafka throttle-time, summed)."),
	}
}

// ObserveThrottle counts one throttle of d by the quota of quotaType.
func (r *Registry) ObserveThrottle(quotaType string, d time.Duration) {
	if r == nil {
		return
	}
	r.quota.throttled.WithLabelValues(quotaType).Inc()
	r.quota.seconds.WithLabelValues(quotaType).Add(d.Seconds())
}
