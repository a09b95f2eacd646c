package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shale-io/shale/infra/objstore"
)

// objectStoreSeries are the object-store request series, per operation
// (objstore.OpPut, OpGet, OpList, OpStat, OpDelete).
type objectStoreSeries struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// objectStoreBuckets span a local filesystem stat to a large multipart PUT.
var objectStoreBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func newObjectStoreSeries(reg *registerer) *objectStoreSeries {
	s := &objectStoreSeries{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shale_objstore_requests_total",
			Help: "Object-store operations, per operation, failed ones included."}, []string{"operation"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shale_objstore_bytes_total",
			Help: "Payload bytes moved by object-store operations (put: declared size; get: bytes read), per operation."}, []string{"operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shale_objstore_errors_total",
			Help: "Failed object-store operations, per operation and reason (not_found or error)."}, []string{"operation", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shale_objstore_request_duration_seconds",
			Help: "Object-store operation latency (get: from the call to closing the body), per operation.", Buckets: objectStoreBuckets},
			[]string{"operation"}),
	}
	reg.MustRegister(s.requests, s.bytes, s.errors, s.duration)
	return s
}

// ObjectStoreSink returns the objstore.MetricsSink that feeds the
// object-store series; wrap a bucket with objstore.WithMetrics(b, sink).
// A nil Registry returns a sink that discards.
func (r *Registry) ObjectStoreSink() objstore.MetricsSink {
	if r == nil {
		return discardSink{}
	}
	return r.objstore
}

// Observe implements objstore.MetricsSink.
func (s *objectStoreSeries) Observe(op string, bytes int64, dur time.Duration, err error) {
	s.requests.WithLabelValues(op).Inc()
	if bytes > 0 {
		s.bytes.WithLabelValues(op).Add(float64(bytes))
	}
	s.duration.WithLabelValues(op).Observe(dur.Seconds())
	if err != nil {
		reason := "error"
		if errors.Is(err, objstore.ErrNotFound) {
			reason = "not_found"
		}
		s.errors.WithLabelValues(op, reason).Inc()
	}
}

type discardSink struct{}

func (discardSink) Observe(string, int64, time.Duration, error) {}
