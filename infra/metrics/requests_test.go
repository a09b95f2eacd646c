package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// histogramSum returns the sum of the histogram name{request=api}.
func histogramSum(t *testing.T, fams map[string]*dto.MetricFamily, name, api string) float64 {
	t.Helper()
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "request" && lp.GetValue() == api && m.Histogram != nil {
					return m.Histogram.GetSampleSum()
				}
			}
		}
	}
	t.Fatalf("no histogram %s{request=%q}", name, api)
	return 0
}

// TestRequestSeries: each stage lands in its own histogram, labelled by
// API, beside the total and the request counter that ObserveRequest feeds.
func TestRequestSeries(t *testing.T) {
	r := New(nil)
	s := r.RequestSeries("Produce")
	st := RequestStages{RequestQueue: time.Millisecond, Local: 2 * time.Millisecond, Remote: 30 * time.Millisecond,
		ResponseQueue: 4 * time.Millisecond, ResponseSend: 5 * time.Millisecond, Total: 42 * time.Millisecond}
	s.Observe(9, st, false)
	s.Observe(9, st, false)
	s.Observe(40, st, true) // beyond the cached versions
	r.ObserveRequest("Produce", 9, time.Millisecond, false)

	f := scrape(t, r.Handler())
	want(t, f, 3, "kafka_network_requestmetrics_requests_total", "request", "Produce", "version", "9")
	want(t, f, 1, "kafka_network_requestmetrics_requests_total", "request", "Produce", "version", "40")
	want(t, f, 4, "kafka_network_requestmetrics_total_time_seconds", "request", "Produce")
	want(t, f, 1, "shale_network_request_failures_total", "request", "Produce")
	for name, d := range map[string]time.Duration{
		"kafka_network_requestmetrics_request_queue_time_seconds":  st.RequestQueue,
		"kafka_network_requestmetrics_local_time_seconds":          st.Local,
		"kafka_network_requestmetrics_remote_time_seconds":         st.Remote,
		"kafka_network_requestmetrics_response_queue_time_seconds": st.ResponseQueue,
		"kafka_network_requestmetrics_response_send_time_seconds":  st.ResponseSend,
	} {
		want(t, f, 3, name, "request", "Produce")
		if got, w := histogramSum(t, f, name, "Produce"), 3*d.Seconds(); got < w*0.999 || got > w*1.001 {
			t.Errorf("%s sum %v, want %v", name, got, w)
		}
	}
	if _, ok := sample(f, "kafka_network_requestmetrics_local_time_seconds", "request", "FetchConsumer"); ok {
		t.Error("a stage series for FetchConsumer, which was never observed")
	}

	var nilReg *Registry
	nilReg.RequestSeries("Produce").Observe(1, st, true) // ignored
}

// TestRequestSeriesNoAllocs: an observation through resolved series
// allocates nothing, so that it can run on every request.
func TestRequestSeriesNoAllocs(t *testing.T) {
	s := New(nil).RequestSeries("FetchConsumer")
	st := RequestStages{Local: time.Millisecond, Total: time.Millisecond}
	s.Observe(12, st, false) // resolves version 12
	if n := testing.AllocsPerRun(1000, func() { s.Observe(12, st, false) }); n != 0 {
		t.Fatalf("%v allocations per observation, want 0", n)
	}
}

// BenchmarkRequestSeries is the cost of one request's observation: the
// counter, the total and the five stage histograms, against the total
// alone through Registry.ObserveRequest (the cost before the stages).
//
//	go test -run '^$' -bench RequestSeries -benchmem ./infra/metrics
func BenchmarkRequestSeries(b *testing.B) {
	r := New(nil)
	st := RequestStages{RequestQueue: 10 * time.Microsecond, Local: 200 * time.Microsecond,
		ResponseQueue: 5 * time.Microsecond, ResponseSend: 30 * time.Microsecond, Total: 245 * time.Microsecond}
	b.Run("stages", func(b *testing.B) {
		s := r.RequestSeries("Produce")
		for b.Loop() {
			s.Observe(9, st, false)
		}
	})
	b.Run("total-only", func(b *testing.B) {
		for b.Loop() {
			r.ObserveRequest("Produce", 9, st.Total, false)
		}
	})
}
