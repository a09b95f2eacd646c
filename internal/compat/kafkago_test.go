package compat

import (
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// kafkaGoCodecs maps codec names to kafka-go's codecs.
var kafkaGoCodecs = map[string]compress.Compression{
	"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd,
}

// seqOf returns the "seq" header of a kafka-go message, or -1.
func seqOf(hs []kafka.Header) int {
	for _, h := range hs {
		if h.Key == "seq" {
			if i, err := strconv.Atoi(string(h.Value)); err == nil {
				return i
			}
		}
	}
	return -1
}

// kafkaGoProduce writes recs with an acks=all Writer (kafka-go has no
// idempotent producer) whose balancer routes each message to the partition
// its record asks for, and records the offsets the Completion hook reports.
func kafkaGoProduce(t *testing.T, addr, topic string, codec compress.Compression, recs []record) {
	t.Helper()
	var mu sync.Mutex
	var completeErr error
	// A Transport of its own: kafka-go's DefaultTransport caches metadata
	// for MetadataTTL (6 s) and answers UNKNOWN_TOPIC_OR_PARTITION for a
	// topic created since its last refresh.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Transport:    tr,
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchSize:    50,
		BatchTimeout: 5 * time.Millisecond,
		WriteTimeout: 20 * time.Second,
		ReadTimeout:  20 * time.Second,
		MaxAttempts:  5,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
			return int(recs[seqOf(m.Headers)].Partition)
		}),
		Completion: func(msgs []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				completeErr = err
				return
			}
			for _, m := range msgs {
				recs[seqOf(m.Headers)].Offset = m.Offset
			}
		},
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		m := kafka.Message{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msgs[i] = m
	}
	err := w.WriteMessages(proctest.Context(t, 30*time.Second), msgs...)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if completeErr != nil {
		t.Fatalf("kafka-go completion: %v", completeErr)
	}
	for i, r := range recs {
		if r.Offset < 0 {
			t.Fatalf("record %d: no offset reported by the writer", i)
		}
	}
}

// kafkaGoConsume reads want[p] records from each partition from the first
// offset with a group-less Reader per partition.
func kafkaGoConsume(t *testing.T, addr, topic string, want [numPartitions][]record) [numPartitions][]record {
	t.Helper()
	ctx := proctest.Context(t, 30*time.Second)
	var got [numPartitions][]record
	for p := range numPartitions {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{addr}, Topic: topic, Partition: p,
			MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond,
		})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			t.Fatal(err)
		}
		for len(got[p]) < len(want[p]) {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("partition %d: read after %d of %d records: %v", p, len(got[p]), len(want[p]), err)
			}
			rec := record{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value}
			for _, h := range m.Headers {
				rec.Headers = append(rec.Headers, header{Key: h.Key, Value: h.Value})
			}
			got[p] = append(got[p], rec)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("close reader %d: %v", p, err)
		}
	}
	return got
}

func TestKafkaGoProduceConsumeEveryCodec(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	for _, name := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "kafkago-" + name
			createTopic(t, n.KafkaAddr(), topic, numPartitions)
			sent := makeRecords(300, name, true)
			kafkaGoProduce(t, n.KafkaAddr(), topic, kafkaGoCodecs[name], sent)
			want := byPartition(sent)
			got := kafkaGoConsume(t, n.KafkaAddr(), topic, want)
			// kafka-go's reader returns nil for a zero-length key or
			// value, so it cannot tell null from empty; franz-go reads the
			// same topic again to check what the writer put on the wire.
			for p := range numPartitions {
				checkPartition(t, p, want[p], got[p], false)
			}
			got = franzConsume(t, n.KafkaAddr(), topic, want)
			for p := range numPartitions {
				checkPartition(t, p, want[p], got[p], true)
			}
		})
	}
}

func TestKafkaGoConnAndClientAdmin(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 30*time.Second)
	conn, err := kafka.DialContext(ctx, "tcp", n.KafkaAddr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}

	versions, err := conn.ApiVersions()
	if err != nil || len(versions) == 0 {
		t.Fatalf("ApiVersions: %d keys, %v", len(versions), err)
	}
	brokers, err := conn.Brokers()
	if err != nil || len(brokers) != 1 {
		t.Fatalf("Brokers: %+v, %v", brokers, err)
	}
	host, port, _ := net.SplitHostPort(n.KafkaAddr())
	if brokers[0].Host != host || strconv.Itoa(brokers[0].Port) != port {
		t.Fatalf("Brokers advertises %s:%d, bootstrap is %s", brokers[0].Host, brokers[0].Port, n.KafkaAddr())
	}
	if ctrl, err := conn.Controller(); err != nil || ctrl.ID != brokers[0].ID {
		t.Fatalf("Controller: %+v, %v (broker %d)", ctrl, err, brokers[0].ID)
	}

	const topic = "kafkago-admin"
	err = conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 4, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "7200000"}}})
	if err != nil {
		t.Fatalf("Conn.CreateTopics: %v", err)
	}
	parts, err := conn.ReadPartitions(topic)
	if err != nil || len(parts) != 4 {
		t.Fatalf("ReadPartitions: %d partitions, %v", len(parts), err)
	}
	ids := []int{}
	for _, p := range parts {
		if p.Topic != topic || p.Leader.ID != brokers[0].ID || len(p.Replicas) != 1 || len(p.Isr) != 1 {
			t.Fatalf("ReadPartitions: partition %+v", p)
		}
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int{0, 1, 2, 3}) {
		t.Fatalf("ReadPartitions ids %v", ids)
	}

	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(n.KafkaAddr()), Timeout: 20 * time.Second, Transport: tr}
	dc, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"retention.ms"}}}})
	if err != nil || len(dc.Resources) != 1 || dc.Resources[0].Error != nil {
		t.Fatalf("Client.DescribeConfigs: %+v, %v", dc, err)
	}
	if es := dc.Resources[0].ConfigEntries; len(es) != 1 || es[0].ConfigName != "retention.ms" || es[0].ConfigValue != "7200000" {
		t.Fatalf("Client.DescribeConfigs entries: %+v", es)
	}

	if all, err := conn.ReadPartitions(); err != nil || !slices.ContainsFunc(all, func(p kafka.Partition) bool { return p.Topic == topic }) {
		t.Fatalf("ReadPartitions of all topics before delete: %d partitions without %s, %v", len(all), topic, err)
	}
	if err := conn.DeleteTopics(topic); err != nil {
		t.Fatalf("Conn.DeleteTopics: %v", err)
	}
	// All topics, so that kafka-go does not ask for auto-creation (it sets
	// AllowAutoTopicCreation when it names a topic, which would recreate it).
	all, err := conn.ReadPartitions()
	if err != nil {
		t.Fatalf("ReadPartitions of all topics: %v", err)
	}
	for _, p := range all {
		if p.Topic == topic {
			t.Fatalf("ReadPartitions still lists %s after DeleteTopics: %+v", topic, p)
		}
	}
}
