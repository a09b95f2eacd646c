package compat

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestLibrdkafkaPushesTelemetry: KIP-714 with a client that pushes. A
// subscription to org.apache.kafka. metrics, every second, for every
// client, is set with IncrementalAlterConfigs (CLIENT_METRICS); a
// librdkafka producer (confluent-kafka-go) produces and, because the node
// advertises GetTelemetrySubscriptions and PushTelemetry, asks for its
// subscription and pushes: its org.apache.kafka.producer.* metrics appear
// on the node's /metrics with its client id. The franz-go client beside
// it, which does not implement KIP-714, pushes nothing.
func TestLibrdkafkaPushesTelemetry(t *testing.T) {
	const topic = "telemetry"
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 90*time.Second)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.ClientID("tele-franz"))
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "everyone"
	for k, v := range map[string]string{"metrics": "org.apache.kafka.", "interval.ms": "1000"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("subscription: %v %+v", err, resp)
	}

	p, err := kafka.NewProducer(with(confluentConfig(n.KafkaAddr()), "client.id", "tele-librdkafka", "linger.ms", 5))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deliveries := make(chan kafka.Event, 1)
	tp := topic
	produceOne := func() {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: 0}, Value: []byte("hello")}, deliveries); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-deliveries:
			if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatal(m.TopicPartition.Error)
			}
		case <-ctx.Done():
			t.Fatal("no delivery report")
		}
	}
	produceOne()

	series := regexp.MustCompile(`(?m)^org_apache_kafka_producer_\w+\{[^}]*client_id="tele-librdkafka"[^}]*\} \S+$`)
	var page string
	for i := 0; i < 60 && !series.MatchString(page); i++ { // bounded: 60 rounds of a produce and a scrape
		produceOne()
		page = testnode.AdminGet(t, n, broker.MetricsPath)
		if !series.MatchString(page) {
			select {
			case <-ctx.Done():
				t.Fatalf("no pushed producer metric on /metrics:\n%s", grepLines(page, "telemetry|org_apache"))
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if !series.MatchString(page) {
		t.Fatalf("no pushed producer metric on /metrics after 60 rounds:\n%s", grepLines(page, "telemetry|org_apache"))
	}
	t.Logf("librdkafka's pushed series: %d, e.g. %s", len(series.FindAllString(page, -1)), series.FindString(page))
	if regexp.MustCompile(`client_id="tele-franz"`).MatchString(page) {
		t.Errorf("a series of the franz-go client, which does not push:\n%s", grepLines(page, "tele-franz"))
	}
}

// grepLines is page's lines that match pattern.
func grepLines(page, pattern string) string {
	return strings.Join(regexp.MustCompile(`(?m)^.*(`+pattern+`).*$`).FindAllString(page, 200), "\n")
}
