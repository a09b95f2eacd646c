package broker_test

import (
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testlog"
	"github.com/shale-io/shale/internal/testnode"
)

// requestStageSeries are the per-stage request histograms, in stage order.
var requestStageSeries = []string{
	"kafka_network_requestmetrics_request_queue_time_seconds",
	"kafka_network_requestmetrics_local_time_seconds",
	"kafka_network_requestmetrics_remote_time_seconds",
	"kafka_network_requestmetrics_response_queue_time_seconds",
	"kafka_network_requestmetrics_response_send_time_seconds",
}

// histogramOf returns the histogram name{request=api}, or nil.
func histogramOf(fams map[string]*dto.MetricFamily, name, api string) *dto.Histogram {
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "request" && lp.GetValue() == api {
					return m.Histogram
				}
			}
		}
	}
	return nil
}

// TestRequestStageMetrics: after acks=all produces on a real node, /metrics
// has each stage histogram for Produce with one sample per produce request,
// and the stages' sums add up to the total's.
func TestRequestStageMetrics(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 60*time.Second)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "stages"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "stages", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A request is observed just after its response is written: poll.
	var f map[string]*dto.MetricFamily
	proctest.Eventually(t, 20*time.Second, "five Produce requests in the total-time histogram", func() bool {
		f = testnode.Scrape(t, n)
		h := histogramOf(f, "kafka_network_requestmetrics_total_time_seconds", "Produce")
		return h != nil && h.GetSampleCount() >= 5
	})
	// Scrape again: a scrape gathers the histograms one after another, so
	// the one that first saw the fifth total may have read a stage before
	// the fifth request's observation of it. Each request observes its
	// stages before its total (RequestSeries.Observe), so every scrape
	// that starts after a total was seen has all of that request's stages.
	f = testnode.Scrape(t, n)
	total := histogramOf(f, "kafka_network_requestmetrics_total_time_seconds", "Produce")
	var stageSum float64
	for _, name := range requestStageSeries {
		h := histogramOf(f, name, "Produce")
		if h == nil {
			t.Fatalf("no %s{request=\"Produce\"} on /metrics", name)
		}
		if h.GetSampleCount() != total.GetSampleCount() {
			t.Errorf("%s: %d samples, total time has %d", name, h.GetSampleCount(), total.GetSampleCount())
		}
		if h.GetSampleSum() < 0 {
			t.Errorf("%s: negative sum %v", name, h.GetSampleSum())
		}
		stageSum += h.GetSampleSum()
	}
	if d := math.Abs(stageSum - total.GetSampleSum()); d > 1e-6*total.GetSampleSum()+1e-9 {
		t.Errorf("Produce stages sum to %vs, total %vs", stageSum, total.GetSampleSum())
	}
	for _, api := range []string{"Metadata", "ApiVersions", "CreateTopics"} {
		for _, name := range requestStageSeries {
			if v := testnode.MustMetric(t, f, name, "request", api); v < 1 {
				t.Errorf("%s{request=%q}: %v samples", name, api, v)
			}
		}
	}
}

// TestSlowRequestLogOnNode: request_log_slow_threshold reaches the node's
// Kafka server: with a 1ns threshold an acks=all produce logs a slow-request
// line with its stages.
func TestSlowRequestLogOnNode(t *testing.T) {
	cfg := testnode.Config(t.TempDir(), func(c *config.Broker) { c.RequestLogSlowThreshold = time.Nanosecond })
	var logs testlog.Buffer
	ctx := proctest.Context(t, 60*time.Second)
	n := testnode.StartConfig(t, ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	cl := testnode.Client(t, n.KafkaAddr(), kgo.ClientID("slow-test"), kgo.AllowAutoTopicCreation())
	// The client's first requests may use up the second's lines (at most
	// five per second): produce again each round until a Produce line shows.
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	proctest.Eventually(t, 20*time.Second, "a slow-request line for Produce", func() bool {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "slow", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "level=INFO") && strings.Contains(l, `msg="kafka: slow request"`) &&
				strings.Contains(l, "api=Produce") && strings.Contains(l, "client_id=slow-test") &&
				strings.Contains(l, "remote_ms=") && strings.Contains(l, "total_ms=") {
				return true
			}
		}
		return false
	})
}
