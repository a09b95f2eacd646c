package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// saramaCodecs maps codec names to sarama's codecs.
var saramaCodecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.ClientID = "shale-compat-sarama"
	c.Metadata.Retry.Max = 20
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Net.DialTimeout = 10 * time.Second
	c.Net.ReadTimeout = 20 * time.Second
	c.Net.WriteTimeout = 20 * time.Second
	return c
}

func saramaBytes(b []byte) sarama.Encoder {
	if b == nil {
		return nil
	}
	return sarama.ByteEncoder(b)
}

// saramaProduce sends recs with an idempotent, acks=all sync producer and
// records the partition and offset sarama reports for each.
func saramaProduce(t *testing.T, addr, topic string, codec sarama.CompressionCodec, recs []record) {
	t.Helper()
	c := saramaConfig()
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Retry.Max = 5
	c.Producer.Return.Successes = true
	c.Producer.Compression = codec
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	c.Producer.Timeout = 20 * time.Second
	p, err := sarama.NewSyncProducer([]string{addr}, c)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Key: saramaBytes(r.Key), Value: saramaBytes(r.Value), Metadata: i}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i] = m
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("sarama SendMessages: %v", err)
	}
	for i, m := range msgs {
		if m.Partition != recs[i].Partition {
			t.Fatalf("record %d went to partition %d, want %d", i, m.Partition, recs[i].Partition)
		}
		recs[i].Offset = m.Offset
	}
}

// saramaConsume reads want[p] records from each partition from the oldest
// offset with one partition consumer per partition.
func saramaConsume(t *testing.T, addr, topic string, want [numPartitions][]record) [numPartitions][]record {
	t.Helper()
	c := saramaConfig()
	c.Consumer.Return.Errors = true
	c.Consumer.Fetch.Default = 64 << 10
	cons, err := sarama.NewConsumer([]string{addr}, c)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	ctx := proctest.Context(t, 30*time.Second)
	var got [numPartitions][]record
	for p := range numPartitions {
		pc, err := cons.ConsumePartition(topic, int32(p), sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition %d: %v", p, err)
		}
		for len(got[p]) < len(want[p]) {
			select {
			case m := <-pc.Messages():
				r := record{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
				for _, h := range m.Headers {
					r.Headers = append(r.Headers, header{Key: string(h.Key), Value: h.Value})
				}
				got[p] = append(got[p], r)
			case err := <-pc.Errors():
				t.Fatalf("partition %d: %v", p, err)
			case <-ctx.Done():
				t.Fatalf("partition %d: consumed %d of %d before the deadline", p, len(got[p]), len(want[p]))
			}
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("close partition consumer %d: %v", p, err)
		}
	}
	return got
}

func TestSaramaProduceConsumeEveryCodec(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	for _, name := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "sarama-" + name
			createTopic(t, n.KafkaAddr(), topic, numPartitions)
			sent := makeRecords(300, name, true)
			saramaProduce(t, n.KafkaAddr(), topic, saramaCodecs[name], sent)
			want := byPartition(sent)
			got := saramaConsume(t, n.KafkaAddr(), topic, want)
			for p := range numPartitions {
				checkPartition(t, p, want[p], got[p], true)
			}
			checkIdempotent(t, n.KafkaAddr(), topic, want)
		})
	}
}

func TestSaramaClusterAdmin(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	adm, err := sarama.NewClusterAdmin([]string{n.KafkaAddr()}, saramaConfig())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	const topic = "sarama-admin"
	retention := "3600000"
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); !isSaramaErr(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("second CreateTopic: got %v, want TOPIC_ALREADY_EXISTS", err)
	}

	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 2 || d.ReplicationFactor != 1 {
		t.Fatalf("ListTopics: %s = %+v (present %v)", topic, d, ok)
	}

	//lint:ignore SA1019 the single-resource call is what older sarama users run; it must keep working
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	if v := saramaEntry(entries, "retention.ms"); v == nil || v.Value != retention || v.Default {
		t.Fatalf("DescribeConfig retention.ms = %+v, want %s set by the topic", v, retention)
	}

	if err := adm.CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 3 {
		t.Fatalf("DescribeTopics after CreatePartitions: %v %s", err, saramaTopicMeta(md))
	}

	brokers, controller, err := adm.DescribeCluster()
	if err != nil || len(brokers) != 1 || controller < 0 {
		t.Fatalf("DescribeCluster: brokers %d controller %d err %v", len(brokers), controller, err)
	}

	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	topics, err = adm.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics after delete: %v", err)
	}
	if _, ok := topics[topic]; ok {
		t.Fatalf("ListTopics still lists %s after DeleteTopic", topic)
	}
}

func isSaramaErr(err error, want sarama.KError) bool {
	if te, ok := err.(*sarama.TopicError); ok {
		return te.Err == want
	}
	return err == want
}

func saramaEntry(entries []sarama.ConfigEntry, name string) *sarama.ConfigEntry {
	for i := range entries {
		if entries[i].Name == name {
			return &entries[i]
		}
	}
	return nil
}

func saramaTopicMeta(md []*sarama.TopicMetadata) string {
	s := ""
	for _, m := range md {
		s += fmt.Sprintf("[%s err=%v partitions=%d]", m.Name, m.Err, len(m.Partitions))
	}
	return s
}
