package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RequestStages is where one request's time went, Kafka's RequestChannel
// breakdown (RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs,
// ResponseQueueTimeMs, ResponseSendTimeMs, TotalTimeMs). It has the fields
// of kafka.RequestStages, which defines the stages and converts to it.
type RequestStages struct {
	RequestQueue  time.Duration
	Local         time.Duration
	Remote        time.Duration
	ResponseQueue time.Duration
	ResponseSend  time.Duration
	Total         time.Duration
}

// stageTimeBuckets add sub-millisecond buckets to requestTimeBuckets: a
// request's queue and send stages are usually tens of microseconds.
var stageTimeBuckets = append([]float64{.00005, .0001, .00025}, requestTimeBuckets...)

// requestStageSeries are the stage histograms, each labelled by request.
type requestStageSeries struct {
	requestQueue, local, remote, responseQueue, responseSend *prometheus.HistogramVec
}

func (r *Registry) newRequestStageSeries() requestStageSeries {
	h := func(name, help string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: stageTimeBuckets}, []string{"request"})
		r.reg.MustRegister(v)
		return v
	}
	return requestStageSeries{
		requestQueue: h("kafka_network_requestmetrics_request_queue_time_seconds",
			"Time from reading a request to its handler starting, per API (Kafka RequestQueueTimeMs)."),
		local: h("kafka_network_requestmetrics_local_time_seconds",
			"Time in the request's handler, per API (Kafka LocalTimeMs), less the waits for data it reported (a fetch's long poll), which are remote time."),
		remote: h("kafka_network_requestmetrics_remote_time_seconds",
			"Time the request waited for data or other nodes, per API (Kafka RemoteTimeMs): a fetch's long poll and cold reads, acks=all waiting for the high watermark."),
		responseQueue: h("kafka_network_requestmetrics_response_queue_time_seconds",
			"Time a response waited behind earlier responses of its connection, per API (Kafka ResponseQueueTimeMs)."),
		responseSend: h("kafka_network_requestmetrics_response_send_time_seconds",
			"Time encoding and writing a response, per API (Kafka ResponseSendTimeMs)."),
	}
}

// RequestSeries are the request series of one API, resolved once, so that
// Observe looks no label up and allocates nothing (beyond a request
// version's first observation and a failure). Get them once per API with
// Registry.RequestSeries and keep them. Safe for concurrent use; a nil
// *RequestSeries ignores observations.
type RequestSeries struct {
	r   *Registry
	api string

	total, requestQueue, local, remote, responseQueue, responseSend prometheus.Observer
	versions                                                        [32]atomic.Pointer[prometheus.Counter] // requests_total by version, filled on first use
}

// RequestSeries returns the series of the named API (Kafka's name, for
// example "Produce"; a Fetch is "FetchConsumer" or "FetchFollower", as in
// Kafka's RequestMetrics, by who sent it). The stage and total histograms of the API appear on
// /metrics from this call on; a nil Registry returns nil.
func (r *Registry) RequestSeries(api string) *RequestSeries {
	if r == nil {
		return nil
	}
	st := r.requestStages
	return &RequestSeries{r: r, api: api,
		total:         r.requestTime.WithLabelValues(api),
		requestQueue:  st.requestQueue.WithLabelValues(api),
		local:         st.local.WithLabelValues(api),
		remote:        st.remote.WithLabelValues(api),
		responseQueue: st.responseQueue.WithLabelValues(api),
		responseSend:  st.responseSend.WithLabelValues(api),
	}
}

// Observe counts one request of the series' API at version, its total time
// and each stage, and whether it failed. The total is the one of
// ObserveRequest: the two may be mixed.
func (s *RequestSeries) Observe(version int16, st RequestStages, failed bool) {
	if s == nil {
		return
	}
	// The stages first and the total last: a scrape that counts a request
	// in the total counts it in every stage too (the other order let a
	// scrape see 5 totals and 4 remote times under load).
	s.requestQueue.Observe(st.RequestQueue.Seconds())
	s.local.Observe(st.Local.Seconds())
	s.remote.Observe(st.Remote.Seconds())
	s.responseQueue.Observe(st.ResponseQueue.Seconds())
	s.responseSend.Observe(st.ResponseSend.Seconds())
	s.total.Observe(st.Total.Seconds())
	s.requests(version).Inc()
	if failed {
		s.r.requestFails.WithLabelValues(s.api).Inc()
	}
}

// requests returns the requests_total counter of version, cached for small
// versions. Two first uses racing resolve the same counter.
func (s *RequestSeries) requests(version int16) prometheus.Counter {
	if version < 0 || int(version) >= len(s.versions) {
		return s.r.requests.WithLabelValues(s.api, versionLabel(version))
	}
	if c := s.versions[version].Load(); c != nil {
		return *c
	}
	c := s.r.requests.WithLabelValues(s.api, versionLabel(version))
	s.versions[version].Store(&c)
	return c
}
