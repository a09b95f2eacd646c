package telemetry

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/segment/batch"
)

// clock is a settable clock: the tests move time, they never sleep.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

func newTestManager(t *testing.T, cfg Config) (*Manager, *clock) {
	t.Helper()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	cfg.Now = clk.Now
	return NewManager(cfg), clk
}

func request(clientID string, msg kmsg.Request) *kafka.Request {
	return &kafka.Request{Key: msg.Key(), ClientID: clientID, Msg: msg,
		Conn: &kafka.ConnInfo{ID: 1, Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}}}
}

func getSubs(t *testing.T, m *Manager, clientID string, id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
	t.Helper()
	r := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	r.ClientInstanceID = id
	reply, err := m.handleGetTelemetrySubscriptions(context.Background(), request(clientID, r))
	if err != nil {
		t.Fatal(err)
	}
	return reply.Response.(*kmsg.GetTelemetrySubscriptionsResponse)
}

func push(t *testing.T, m *Manager, clientID string, id [16]byte, sub int32, codec batch.Codec, payload []byte, terminating bool) int16 {
	t.Helper()
	r := kmsg.NewPtrPushTelemetryRequest()
	r.ClientInstanceID, r.SubscriptionID, r.CompressionType, r.Terminating = id, sub, int8(codec), terminating
	var err error
	if r.Metrics, err = batch.Compress(codec, nil, payload); err != nil {
		t.Fatal(err)
	}
	reply, err := m.handlePushTelemetry(context.Background(), request(clientID, r))
	if err != nil {
		t.Fatal(err)
	}
	return reply.Response.(*kmsg.PushTelemetryResponse).ErrorCode
}

func attr(k, v string) *commonv1.KeyValue {
	return &commonv1.KeyValue{Key: k, Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: v}}}
}

// otlpPayload is what a producer pushes: a gauge per broker, a cumulative
// counter, a delta counter and a delta histogram.
func otlpPayload(t testing.TB, latency float64, sent int64, deltaRetries int64) []byte {
	num := func(v float64, attrs ...*commonv1.KeyValue) *metricsv1.NumberDataPoint {
		return &metricsv1.NumberDataPoint{Attributes: attrs, Value: &metricsv1.NumberDataPoint_AsDouble{AsDouble: v}}
	}
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		{Name: "org.apache.kafka.producer.node.request.latency.avg", Description: "Average request latency",
			Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: []*metricsv1.NumberDataPoint{num(latency, attr("node.id", "1")), num(latency*2, attr("node.id", "2"))}}}},
		{Name: "org.apache.kafka.producer.record.send.total", Data: &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{IsMonotonic: true,
			AggregationTemporality: metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints:             []*metricsv1.NumberDataPoint{{Value: &metricsv1.NumberDataPoint_AsInt{AsInt: sent}}}}}},
		{Name: "org.apache.kafka.producer.record.retry.total", Data: &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{IsMonotonic: true,
			AggregationTemporality: metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			DataPoints:             []*metricsv1.NumberDataPoint{{Value: &metricsv1.NumberDataPoint_AsInt{AsInt: deltaRetries}}}}}},
		{Name: "org.apache.kafka.producer.batch.size", Data: &metricsv1.Metric_Histogram{Histogram: &metricsv1.Histogram{
			AggregationTemporality: metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			DataPoints: []*metricsv1.HistogramDataPoint{{Count: 3, Sum: proto.Float64(3000), ExplicitBounds: []float64{100, 1000},
				BucketCounts: []uint64{0, 2, 1}}}}}},
		{Name: "go_goroutines", Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: []*metricsv1.NumberDataPoint{num(1)}}}},
	}}}}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gather(t *testing.T, m *Manager) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			b.WriteString(f.GetName())
			for _, l := range mt.GetLabel() {
				b.WriteString(" " + l.GetName() + "=" + l.GetValue())
			}
			switch {
			case mt.GetGauge() != nil:
				b.WriteString(" " + ftoa(mt.GetGauge().GetValue()))
			case mt.GetCounter() != nil:
				b.WriteString(" " + ftoa(mt.GetCounter().GetValue()))
			case mt.GetHistogram() != nil:
				h := mt.GetHistogram()
				b.WriteString(" count=" + ftoa(float64(h.GetSampleCount())) + " sum=" + ftoa(h.GetSampleSum()))
				for _, bk := range h.GetBucket() {
					b.WriteString(" le" + ftoa(bk.GetUpperBound()) + "=" + ftoa(float64(bk.GetCumulativeCount())))
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// TestGetAndPush walks a client through Kafka's sequence: a first
// GetTelemetrySubscriptions assigns an instance id and answers the
// matching subscription, a push exports the metrics on the page with the
// client's labels, an early push or early re-ask is throttled, a changed
// subscription makes the old id UNKNOWN_SUBSCRIPTION_ID and is answered at
// once, and a terminating push is the last one accepted.
func TestGetAndPush(t *testing.T) {
	m, clk := newTestManager(t, Config{})
	none := getSubs(t, m, "app-1", [16]byte{})
	if none.ErrorCode != 0 || none.ClientInstanceID == ([16]byte{}) || len(none.RequestedMetrics) != 0 || none.PushIntervalMillis != 300000 {
		t.Fatalf("no subscription: %+v", none)
	}
	m.SetSubscription("producers", map[string]string{"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_id=app-.*"})
	m.SetSubscription("others", map[string]string{"metrics": "*", "match": "client_id=other"})
	id := none.ClientInstanceID
	// The subscription changed: answered at once, not throttled.
	r := getSubs(t, m, "app-1", id)
	if r.ErrorCode != 0 || r.ClientInstanceID != id || strings.Join(r.RequestedMetrics, ",") != "org.apache.kafka.producer." ||
		r.PushIntervalMillis != 1000 || r.TelemetryMaxBytes != 1<<20 || r.DeltaTemporality || len(r.AcceptedCompressionTypes) != 4 {
		t.Fatalf("subscription: %+v", r)
	}
	if again := getSubs(t, m, "app-1", id); again.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("second ask within the interval: %v", kerr.ErrorForCode(again.ErrorCode))
	}

	// The first push after the answer is accepted at once (clients jitter it).
	if code := push(t, m, "app-1", id, r.SubscriptionID, batch.CodecZstd, otlpPayload(t, 2.5, 10, 1), false); code != 0 {
		t.Fatalf("push: %v", kerr.ErrorForCode(code))
	}
	if code := push(t, m, "app-1", id, r.SubscriptionID, batch.CodecZstd, otlpPayload(t, 3, 11, 1), false); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("early push: %v", kerr.ErrorForCode(code))
	}
	clk.advance(time.Second)
	if code := push(t, m, "app-1", id, r.SubscriptionID, batch.CodecLZ4, otlpPayload(t, 4, 20, 2), false); code != 0 {
		t.Fatalf("second push: %v", kerr.ErrorForCode(code))
	}
	page := gather(t, m)
	iid := instanceIDString(id)
	for _, want := range []string{
		"org_apache_kafka_producer_node_request_latency_avg client_id=app-1 client_instance_id=" + iid + " client_software_name= client_software_version= node_id=1 4\n",
		"org_apache_kafka_producer_node_request_latency_avg client_id=app-1 client_instance_id=" + iid + " client_software_name= client_software_version= node_id=2 8\n",
		"org_apache_kafka_producer_record_send_total client_id=app-1 client_instance_id=" + iid + " client_software_name= client_software_version= 20\n",
		// deltas add up: 1 + 2
		"org_apache_kafka_producer_record_retry_total client_id=app-1 client_instance_id=" + iid + " client_software_name= client_software_version= 3\n",
		"org_apache_kafka_producer_batch_size client_id=app-1 client_instance_id=" + iid + " client_software_name= client_software_version= count=6 sum=6000 le100=0 le1000=4\n",
		"shale_client_telemetry_clients 1\n",
		"shale_client_telemetry_pushes_total error=NONE 2\n",
		"shale_client_telemetry_pushes_total error=THROTTLING_QUOTA_EXCEEDED 1\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "go_goroutines") {
		t.Errorf("a client's metric in the node's own namespace is exported:\n%s", page)
	}

	// A new subscription: the old id is unknown until the client asks again.
	m.SetSubscription("producers", map[string]string{"metrics": "org.apache.kafka.", "interval.ms": "1000"})
	clk.advance(time.Second)
	if code := push(t, m, "app-1", id, r.SubscriptionID, batch.CodecNone, otlpPayload(t, 1, 1, 1), false); code != kerr.UnknownSubscriptionID.Code {
		t.Errorf("push with the old subscription: %v", kerr.ErrorForCode(code))
	}
	r2 := getSubs(t, m, "app-1", id) // not throttled after UNKNOWN_SUBSCRIPTION_ID
	if r2.ErrorCode != 0 || r2.SubscriptionID == r.SubscriptionID {
		t.Fatalf("after the change: %+v", r2)
	}
	if code := push(t, m, "app-1", id, r2.SubscriptionID, batch.CodecGzip, otlpPayload(t, 1, 30, 1), true); code != 0 {
		t.Fatalf("terminating push: %v", kerr.ErrorForCode(code))
	}
	clk.advance(time.Second)
	if code := push(t, m, "app-1", id, r2.SubscriptionID, batch.CodecSnappy, otlpPayload(t, 1, 31, 1), false); code != kerr.InvalidRequest.Code {
		t.Errorf("push after terminating: %v", kerr.ErrorForCode(code))
	}

	// Forgotten three intervals (at least a minute) after its last request.
	clk.advance(minExpiry)
	if page := gather(t, m); strings.Contains(page, "org_apache_kafka") || !strings.Contains(page, "shale_client_telemetry_clients 0\n") {
		t.Errorf("an expired client is still exported:\n%s", page)
	}
}

// TestPushRefusals: Kafka's errors for a bad push.
func TestPushRefusals(t *testing.T) {
	m, clk := newTestManager(t, Config{TelemetryMaxBytes: 4096, MaxDecompressedBytes: 1 << 16})
	m.SetSubscription("all", map[string]string{"metrics": "*", "interval.ms": "100"})
	r := getSubs(t, m, "c", [16]byte{})
	id, sub := r.ClientInstanceID, r.SubscriptionID
	if code := push(t, m, "c", [16]byte{}, sub, batch.CodecNone, nil, false); code != kerr.InvalidRequest.Code {
		t.Errorf("zero instance id: %v", kerr.ErrorForCode(code))
	}
	step := func() { clk.advance(100 * time.Millisecond) }
	if code := push(t, m, "c", id, sub+1, batch.CodecNone, nil, false); code != kerr.UnknownSubscriptionID.Code {
		t.Errorf("wrong subscription id: %v", kerr.ErrorForCode(code))
	}
	step()
	rq := kmsg.NewPtrPushTelemetryRequest()
	rq.ClientInstanceID, rq.SubscriptionID, rq.CompressionType = id, sub, 7
	if reply, _ := m.handlePushTelemetry(context.Background(), request("c", rq)); reply.Response.(*kmsg.PushTelemetryResponse).ErrorCode != kerr.UnsupportedCompressionType.Code {
		t.Errorf("compression type 7: %v", kerr.ErrorForCode(reply.Response.(*kmsg.PushTelemetryResponse).ErrorCode))
	}
	step()
	big := make([]byte, 5000)
	if code := push(t, m, "c", id, sub, batch.CodecNone, big, false); code != kerr.TelemetryTooLarge.Code {
		t.Errorf("5000 bytes over 4096: %v", kerr.ErrorForCode(code))
	}
	step()
	// A bomb: 1 MiB of zeros compresses to little, decompresses past 64 KiB.
	if code := push(t, m, "c", id, sub, batch.CodecZstd, make([]byte, 1<<20), false); code != kerr.TelemetryTooLarge.Code {
		t.Errorf("decompression bomb: %v", kerr.ErrorForCode(code))
	}
	step()
	if code := push(t, m, "c", id, sub, batch.CodecNone, []byte("\xff\xff\xff not protobuf"), false); code != kerr.InvalidRecord.Code {
		t.Errorf("garbage: %v", kerr.ErrorForCode(code))
	}
	step()
	if code := push(t, m, "c", id, sub, batch.CodecNone, otlpPayload(t, 1, 1, 1), false); code != 0 {
		t.Errorf("a good push after the refusals: %v", kerr.ErrorForCode(code))
	}
}

// TestSeriesBounds: new series past the per-client and overall bounds are
// dropped and counted; known ones keep updating.
func TestSeriesBounds(t *testing.T) {
	m, clk := newTestManager(t, Config{MaxSeriesPerClient: 3, MaxSeries: 5})
	m.SetSubscription("all", map[string]string{"metrics": "*", "interval.ms": "100"})
	for i, cid := range []string{"a", "b"} {
		r := getSubs(t, m, cid, [16]byte{})
		if code := push(t, m, cid, r.ClientInstanceID, r.SubscriptionID, batch.CodecNone, otlpPayload(t, float64(i), 1, 1), false); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
		clk.advance(time.Millisecond)
	}
	page := gather(t, m)
	// 5 series per push: a keeps 3, b gets the 2 left of the 5.
	if !strings.Contains(page, "shale_client_telemetry_series 5\n") || !strings.Contains(page, "shale_client_telemetry_series_dropped_total 5\n") {
		t.Errorf("bounds:\n%s", page)
	}
}
