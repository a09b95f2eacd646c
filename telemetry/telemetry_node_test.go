package telemetry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment/batch"
)

// alterClientMetrics sends one IncrementalAlterConfigs of a CLIENT_METRICS
// resource (type 16) and returns its error code.
func alterClientMetrics(t *testing.T, ctx context.Context, cl *kgo.Client, name string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeClientMetrics, name, ops
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0].ErrorCode
}

func deleteOp(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, kmsg.IncrementalAlterConfigOpDelete
	return c
}

// TestClientTelemetry: KIP-714 end to end over franz-go's kmsg (franz-go's
// own client does not push telemetry). A client metrics subscription is
// set with IncrementalAlterConfigs (bad ones refused with Kafka's errors,
// validate-only writing nothing), shown by DescribeConfigs and listed by
// ListConfigResources v0 and v1; a client matching it gets it from
// GetTelemetrySubscriptions, pushes zstd-compressed OTLP metrics, and they
// are on the node's /metrics with its client id and instance id; deleting
// the subscription's configs deletes it. Before, none of these APIs (nor
// the CLIENT_METRICS resources) were served.
func TestClientTelemetry(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.TelemetryMaxBytes = 4096 })
	ctx := proctest.Context(t, 60*time.Second)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.ClientID("tele-1"))
	adm := kadm.NewClient(cl)

	for _, bad := range []struct {
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		want *kerr.Error
	}{
		{testnode.SetConfigOp("interval.ms", "50"), kerr.InvalidRequest},
		{testnode.SetConfigOp("color", "blue"), kerr.InvalidRequest},
		{testnode.SetConfigOp("match", "principal=bob"), kerr.InvalidConfig},
		{testnode.SetConfigOp("match", "client_id=("), kerr.InvalidConfig},
	} {
		if c := alterClientMetrics(t, ctx, cl, "producers", false, bad.op); c != bad.want.Code {
			t.Errorf("%s=%s: %v, want %v", bad.op.Name, *bad.op.Value, kerr.ErrorForCode(c), bad.want)
		}
	}
	sub := []kmsg.IncrementalAlterConfigsRequestResourceConfig{testnode.SetConfigOp("metrics", "org.apache.kafka.producer."),
		testnode.SetConfigOp("interval.ms", "500"), testnode.SetConfigOp("match", "client_id=tele-.*")}
	if c := alterClientMetrics(t, ctx, cl, "producers", true, sub...); c != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(c))
	}
	if l, err := adm.ListConfigResources(ctx, kadm.ConfigResourceClientMetrics); err != nil || len(l.Resources) != 0 {
		t.Fatalf("after validate-only: %+v %v", l, err)
	}
	if c := alterClientMetrics(t, ctx, cl, "producers", false, sub...); c != 0 {
		t.Fatalf("create subscription: %v", kerr.ErrorForCode(c))
	}

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "producers"
	dreq.Resources = append(dreq.Resources, dres)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe: %v %+v", err, dresp)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		got[c.Name] = *c.Value
	}
	if got["metrics"] != "org.apache.kafka.producer." || got["interval.ms"] != "500" || got["match"] != "client_id=tele-.*" {
		t.Errorf("described: %v", got)
	}

	l, err := adm.ListConfigResources(ctx)
	if err != nil || l.Err != nil {
		t.Fatal(err, l.Err)
	}
	if want := (kadm.ConfigResource{Name: "producers", Type: kadm.ConfigResourceClientMetrics}); !slices.Contains(l.Resources, want) ||
		!slices.Contains(l.Resources, kadm.ConfigResource{Name: "0", Type: kadm.ConfigResourceBroker}) {
		t.Errorf("ListConfigResources v1: %v", l.Resources)
	}
	// Kafka 4.0's client sends v0 (ListClientMetricsResources): the subscriptions only.
	cl40 := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V4_0_0()))
	if r, err := kmsg.NewPtrListConfigResourcesRequest().RequestWith(ctx, cl40); err != nil || r.Version != 0 || len(r.ConfigResources) != 1 || r.ConfigResources[0].Name != "producers" {
		t.Errorf("ListConfigResources v0: %v %+v", err, r)
	}

	// The node learns the subscription from the control plane's watch.
	var subs *kmsg.GetTelemetrySubscriptionsResponse
	proctest.Eventually(t, 10*time.Second, "the subscription", func() bool {
		subs, err = kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, cl)
		return err == nil && subs.ErrorCode == 0 && len(subs.RequestedMetrics) == 1
	})
	if subs.RequestedMetrics[0] != "org.apache.kafka.producer." || subs.PushIntervalMillis != 500 || subs.ClientInstanceID == ([16]byte{}) ||
		subs.TelemetryMaxBytes != 4096 {
		t.Fatalf("subscription: %+v", subs)
	}
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		{Name: "org.apache.kafka.producer.record.send.total", Data: &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{IsMonotonic: true,
			AggregationTemporality: metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints:             []*metricsv1.NumberDataPoint{{Value: &metricsv1.NumberDataPoint_AsInt{AsInt: 42}}}}}},
	}}}}}}
	raw, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	preq := kmsg.NewPtrPushTelemetryRequest()
	preq.ClientInstanceID, preq.SubscriptionID, preq.CompressionType = subs.ClientInstanceID, subs.SubscriptionID, int8(batch.CodecZstd)
	if preq.Metrics, err = batch.Compress(batch.CodecZstd, nil, raw); err != nil {
		t.Fatal(err)
	}
	presp, err := preq.RequestWith(ctx, cl)
	if err != nil || presp.ErrorCode != 0 {
		t.Fatalf("push: %v %v", err, kerr.ErrorForCode(presp.ErrorCode))
	}
	// telemetry_max_bytes bounds the payload as sent.
	big := kmsg.NewPtrPushTelemetryRequest()
	big.ClientInstanceID, big.SubscriptionID, big.Terminating, big.Metrics = subs.ClientInstanceID, subs.SubscriptionID, true, make([]byte, 4097)
	if r, err := big.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.TelemetryTooLarge.Code {
		t.Errorf("4097 bytes over telemetry_max_bytes 4096: %v %v", err, r)
	}
	fams := testnode.Scrape(t, n)
	if v := testnode.MustMetric(t, fams, "org_apache_kafka_producer_record_send_total", "client_id", "tele-1"); v != 42 {
		t.Errorf("pushed counter on /metrics: %v, want 42", v)
	}
	if v := testnode.MustMetric(t, fams, "shale_client_telemetry_pushes_total", "error", "NONE"); v != 1 {
		t.Errorf("accepted pushes: %v", v)
	}

	if c := alterClientMetrics(t, ctx, cl, "producers", false, deleteOp("metrics"), deleteOp("interval.ms"), deleteOp("match")); c != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(c))
	}
	if l, err := adm.ListConfigResources(ctx, kadm.ConfigResourceClientMetrics); err != nil || len(l.Resources) != 0 {
		t.Errorf("after deleting every config: %+v %v", l, err)
	}
}

// TestClientTelemetryAcrossNodes: a subscription set through one node is
// answered by every node, with the same subscription id for one client
// instance (Kafka's id is a function of the subscription and the
// instance), so a client that moves to another node pushes there without
// UNKNOWN_SUBSCRIPTION_ID, and its metrics are on that node's /metrics.
func TestClientTelemetryAcrossNodes(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 2)
	ctx := proctest.Context(t, 60*time.Second)
	cl := testnode.Client(t, nodes[0].KafkaAddr(), kgo.ClientID("mover"))
	proctest.Eventually(t, 20*time.Second, "2 brokers", func() bool {
		m, err := kadm.NewClient(cl).Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	if c := alterClientMetrics(t, ctx, cl, "all", false, testnode.SetConfigOp("metrics", "*"), testnode.SetConfigOp("interval.ms", "100")); c != 0 {
		t.Fatalf("subscription: %v", kerr.ErrorForCode(c))
	}
	ids := []int32{1, 2} // StartCluster numbers the nodes from 1
	var first *kmsg.GetTelemetrySubscriptionsResponse
	for i, id := range ids {
		var got *kmsg.GetTelemetrySubscriptionsResponse
		proctest.Eventually(t, 10*time.Second, "the subscription on every node", func() bool {
			req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
			if first != nil {
				req.ClientInstanceID = first.ClientInstanceID
			}
			resp, err := cl.Broker(int(id)).Request(ctx, req)
			if err != nil {
				return false
			}
			got = resp.(*kmsg.GetTelemetrySubscriptionsResponse)
			return got.ErrorCode == 0 && len(got.RequestedMetrics) == 1
		})
		if i == 0 {
			first = got
			continue
		}
		if got.SubscriptionID != first.SubscriptionID || got.ClientInstanceID != first.ClientInstanceID || got.RequestedMetrics[0] != "*" {
			t.Fatalf("node %d answers %+v, node %d answered %+v", id, got, ids[0], first)
		}
	}
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		{Name: "org.apache.kafka.consumer.fetch.manager.fetch.total", Data: &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{IsMonotonic: true,
			AggregationTemporality: metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints:             []*metricsv1.NumberDataPoint{{Value: &metricsv1.NumberDataPoint_AsInt{AsInt: 7}}}}}},
	}}}}}}
	raw, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	// Pushed to the node that did not answer first, with the first node's id.
	preq := kmsg.NewPtrPushTelemetryRequest()
	preq.ClientInstanceID, preq.SubscriptionID, preq.Metrics = first.ClientInstanceID, first.SubscriptionID, raw
	resp, err := cl.Broker(int(ids[1])).Request(ctx, preq)
	if err != nil || resp.(*kmsg.PushTelemetryResponse).ErrorCode != 0 {
		t.Fatalf("push to node %d: %v %v", ids[1], err, resp)
	}
	if v := testnode.MustMetric(t, testnode.Scrape(t, nodes[1]), "org_apache_kafka_consumer_fetch_manager_fetch_total", "client_id", "mover"); v != 7 {
		t.Errorf("node %d exports %v, want 7", ids[1], v)
	}
	if _, ok := testnode.MetricValue(testnode.Scrape(t, nodes[0]), "org_apache_kafka_consumer_fetch_manager_fetch_total"); ok {
		t.Errorf("node %d exports a series pushed to node %d", ids[0], ids[1])
	}
}
