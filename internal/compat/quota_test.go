package compat

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/quota"
)

// TestConfluentProduceQuota: librdkafka (kcat's library) producing as fast
// as it may under its client id's producer_byte_rate is held near it: the
// node answers with throttle_time_ms and mutes the connection, librdkafka
// backs off (KIP-219). The rate is measured over a bounded run, within
// generous bounds for a shared machine (five seconds' worth, one a burst).
func TestConfluentProduceQuota(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.QuotaWindowSize = 100 * time.Millisecond })
	ctx := proctest.Context(t, 90*time.Second)
	const topic, clientID, q = "librdkafka-quota", "rdk-throttled", 50_000
	createTopic(t, n.KafkaAddr(), topic, 1)
	cl := testnode.Client(t, n.KafkaAddr())
	name := clientID
	res, err := kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: quota.KeyProducerByteRate, Value: q}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %v", res, err)
	}
	if err := proctest.WaitFor(10*time.Second, func() bool {
		_, _, ok := n.Quotas().Resolve(quota.Produce, "ANONYMOUS", clientID)
		return ok
	}); err != nil {
		t.Fatal(err)
	}

	p, err := kafka.NewProducer(with(confluentConfig(n.KafkaAddr()), "client.id", clientID, "acks", "all",
		"linger.ms", 5, "batch.size", 16384, "message.timeout.ms", 60000))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const size, total = 1000, 5 * q
	value := make([]byte, size)
	tp := kafka.TopicPartition{Topic: new(topic), Partition: 0}
	reports := make(chan kafka.Event, total/size)
	start := time.Now()
	for i := 0; i < total/size; i++ {
		if err := p.Produce(&kafka.Message{TopicPartition: tp, Value: value}, reports); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < total/size; i++ {
		select {
		case e := <-reports:
			if m, ok := e.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
				t.Fatalf("delivery report %d: %v", i, e)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d delivered: %v", i, total/size, ctx.Err())
		}
	}
	rate := float64(total) / time.Since(start).Seconds()
	t.Logf("librdkafka produced at %.0f B/s against a quota of %d B/s (%.2f)", rate, q, rate/q)
	// Five seconds' worth, one a burst: at most 5/4 of the quota in theory.
	if r := rate / q; r > 1.5 || r < 0.4 {
		t.Fatalf("librdkafka produced at %.2f of its quota, want within [0.4, 1.5]", r)
	}
}
