package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// confluentConfig is the base librdkafka config: bootstrap, quiet logs
// (errors only, to stderr), no auto-commit.
func confluentConfig(addr string) kafka.ConfigMap {
	return kafka.ConfigMap{
		"bootstrap.servers":                  addr,
		"client.id":                          "shale-compat-librdkafka",
		"log_level":                          3,
		"broker.address.family":              "v4",
		"socket.timeout.ms":                  20000,
		"topic.metadata.refresh.interval.ms": 1000,
	}
}

func with(c kafka.ConfigMap, kv ...any) *kafka.ConfigMap {
	for i := 0; i < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return &c
}

// confluentProduce sends recs with an idempotent, acks=all producer, each
// to the partition its record asks for, and records the offsets from the
// delivery reports.
func confluentProduce(t *testing.T, addr, topic, codec string, recs []record) {
	t.Helper()
	p, err := kafka.NewProducer(with(confluentConfig(addr),
		"acks", "all", "enable.idempotence", true, "compression.type", codec,
		"linger.ms", 5, "message.timeout.ms", 30000))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	defer p.Close()
	reports := make(chan kafka.Event, len(recs))
	for i, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            r.Key, Value: r.Value, Opaque: i,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(m, reports); err != nil {
			t.Fatalf("Produce %d: %v", i, err)
		}
	}
	ctx := proctest.Context(t, 40*time.Second)
	for range recs {
		select {
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				t.Fatalf("delivery report: unexpected event %v", ev)
			}
			i := m.Opaque.(int)
			if m.TopicPartition.Error != nil {
				t.Fatalf("record %d: %v", i, m.TopicPartition.Error)
			}
			if m.TopicPartition.Partition != recs[i].Partition {
				t.Fatalf("record %d went to partition %d, want %d", i, m.TopicPartition.Partition, recs[i].Partition)
			}
			recs[i].Offset = int64(m.TopicPartition.Offset)
		case <-ctx.Done():
			t.Fatalf("delivery reports: deadline with %d outstanding", p.Len())
		}
	}
}

// confluentConsume reads want[p] records of every partition from the
// beginning with a group-less consumer and Assign.
func confluentConsume(t *testing.T, addr, topic string, want [numPartitions][]record) [numPartitions][]record {
	t.Helper()
	// confluent-kafka-go requires a group.id even for Assign; nothing is
	// committed, and the group coordinator is never needed.
	c, err := kafka.NewConsumer(with(confluentConfig(addr),
		"group.id", "shale-compat-unused", "enable.auto.commit", false, "enable.auto.offset.store", false,
		"fetch.wait.max.ms", 200))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	total := 0
	for p := range numPartitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
		total += len(want[p])
	}
	if err := c.Assign(tps); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	deadline := time.Now().Add(40 * time.Second)
	var got [numPartitions][]record
	for n := 0; n < total; {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records before the deadline", n, total)
		}
		switch ev := c.Poll(200).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("consume: %v", ev.TopicPartition.Error)
			}
			r := record{Partition: ev.TopicPartition.Partition, Offset: int64(ev.TopicPartition.Offset), Key: ev.Key, Value: ev.Value}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, header{Key: h.Key, Value: h.Value})
			}
			got[r.Partition] = append(got[r.Partition], r)
			n++
		case kafka.Error:
			if ev.IsFatal() {
				t.Fatalf("consumer: fatal %v", ev)
			}
			t.Logf("consumer: %v", ev)
		}
	}
	return got
}

func TestConfluentProduceConsumeEveryCodec(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	for _, name := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "confluent-" + name
			createTopic(t, n.KafkaAddr(), topic, numPartitions)
			sent := makeRecords(300, name, true)
			confluentProduce(t, n.KafkaAddr(), topic, name, sent)
			want := byPartition(sent)
			got := confluentConsume(t, n.KafkaAddr(), topic, want)
			for p := range numPartitions {
				checkPartition(t, p, want[p], got[p], true)
			}
			checkIdempotent(t, n.KafkaAddr(), topic, want)
		})
	}
}

func TestConfluentAdminClient(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	adm, err := kafka.NewAdminClient(with(confluentConfig(n.KafkaAddr())))
	if err != nil {
		t.Fatalf("NewAdminClient: %v", err)
	}
	defer adm.Close()
	ctx := proctest.Context(t, 30*time.Second)
	const topic = "confluent-admin"

	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 2, ReplicationFactor: 1,
		Config: map[string]string{"retention.ms": "5400000"}}}, kafka.SetAdminOperationTimeout(10*time.Second))
	if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateTopics: %v %v", res, err)
	}
	res, err = adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}})
	if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrTopicAlreadyExists {
		t.Fatalf("second CreateTopics: %v %v, want TOPIC_ALREADY_EXISTS", res, err)
	}

	md, err := adm.GetMetadata(nil, true, 10000)
	if err != nil {
		t.Fatalf("GetMetadata: %v", err)
	}
	if tm, ok := md.Topics[topic]; !ok || tm.Error.Code() != kafka.ErrNoError || len(tm.Partitions) != 2 {
		t.Fatalf("GetMetadata: %s = %+v (present %v)", topic, tm, ok)
	}
	if len(md.Brokers) != 1 {
		t.Fatalf("GetMetadata brokers: %+v", md.Brokers)
	}

	cfgs, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil || len(cfgs) != 1 || cfgs[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("DescribeConfigs topic: %v %v", cfgs, err)
	}
	if e, ok := cfgs[0].Config["retention.ms"]; !ok || e.Value != "5400000" || e.Source != kafka.ConfigSourceDynamicTopic {
		t.Fatalf("DescribeConfigs retention.ms = %+v (present %v), want 5400000 from DYNAMIC_TOPIC_CONFIG", e, ok)
	}
	brokerID := fmt.Sprint(md.Brokers[0].ID)
	cfgs, err = adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: brokerID}})
	if err != nil || len(cfgs) != 1 || cfgs[0].Error.Code() != kafka.ErrNoError || len(cfgs[0].Config) == 0 {
		t.Fatalf("DescribeConfigs broker %s: %v %v", brokerID, cfgs, err)
	}

	cl, err := adm.DescribeCluster(ctx)
	if err != nil || len(cl.Nodes) != 1 || cl.Controller == nil || int32(cl.Controller.ID) != md.Brokers[0].ID {
		t.Fatalf("DescribeCluster: %+v %v", cl, err)
	}

	pres, err := adm.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 3}})
	if err != nil || len(pres) != 1 || pres[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreatePartitions: %v %v", pres, err)
	}

	dres, err := adm.DeleteTopics(ctx, []string{topic}, kafka.SetAdminOperationTimeout(10*time.Second))
	if err != nil || len(dres) != 1 || dres[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("DeleteTopics: %v %v", dres, err)
	}
	md, err = adm.GetMetadata(nil, true, 10000)
	if err != nil {
		t.Fatalf("GetMetadata after delete: %v", err)
	}
	if _, ok := md.Topics[topic]; ok {
		t.Fatalf("GetMetadata still lists %s after DeleteTopics", topic)
	}
}
