package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment/batch"
)

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// topicIDOf asks cl's cluster for topic's id: a raw Produce (v13) or Fetch
// (v13+) names its topics by id (KIP-516), and kgo fills in no id.
func topicIDOf(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	m, err := kadm.NewClient(cl).Metadata(ctxT(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := m.Topics[topic]
	if !ok || td.Err != nil || td.ID == (kadm.TopicID{}) {
		t.Fatalf("topic %s: no id (%v)", topic, td.Err)
	}
	return td.ID
}

// ctxT is proctest.Context, by the name the broker tests use.
func ctxT(t *testing.T, d time.Duration) context.Context { return proctest.Context(t, d) }

func makeRecords(topic string, n int, tag string) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic:   topic,
			Key:     []byte(fmt.Sprintf("key-%d", i%17)),
			Value:   bytes.Repeat([]byte(fmt.Sprintf("%s-%06d|", tag, i)), 1+i%9),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}},
		}
	}
	return recs
}

// consumeAll reads n records of topic from the start, keyed by the "i" header.
func consumeAll(t *testing.T, addr, topic string, n int) map[string]*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t, 60*time.Second)
	got := map[string]*kgo.Record{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			id := string(r.Headers[0].Value)
			if _, dup := got[id]; dup {
				t.Fatalf("record %s consumed twice", id)
			}
			got[id] = r
		})
	}
	return got
}

func checkSame(t *testing.T, sent []*kgo.Record, got map[string]*kgo.Record) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("got %d records, sent %d", len(got), len(sent))
	}
	for i, s := range sent {
		g := got[fmt.Sprint(i)]
		if g == nil || !bytes.Equal(g.Key, s.Key) || !bytes.Equal(g.Value, s.Value) || g.Offset != s.Offset || g.Partition != s.Partition {
			t.Fatalf("record %d differs: sent %+v, got %+v", i, s, g)
		}
	}
}

func TestProduceConsumeEveryCodec(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	adm := kadm.NewClient(newClient(t, n.KafkaAddr()))
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			prod := newClient(t, n.KafkaAddr(), kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()))
			sent := makeRecords(topic, 500, name)
			if err := prod.ProduceSync(ctxT(t, 30*time.Second), sent...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			checkSame(t, sent, consumeAll(t, n.KafkaAddr(), topic, len(sent)))
		})
	}
}

func TestRestartKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	topic := "durable"
	prod := newClient(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	sent := makeRecords(topic, 300, "before")
	if err := prod.ProduceSync(ctxT(t, 30*time.Second), sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	if err := n.Close(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	n2 := testnode.Start(t, dir)
	checkSame(t, sent, consumeAll(t, n2.KafkaAddr(), topic, len(sent)))
	// The idempotent producer state came back too: a new producer appends after the old records.
	prod2 := newClient(t, n2.KafkaAddr())
	more := makeRecords(topic, 10, "after")
	if err := prod2.ProduceSync(ctxT(t, 30*time.Second), more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range more {
		if r.Offset < 300 {
			t.Fatalf("record written over existing offsets: %d", r.Offset)
		}
	}
}

func TestAdminLifecycle(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := newClient(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 30*time.Second)
	ret := "3600000"
	resp, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &ret}, "admin")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "admin"); err == nil {
		t.Fatal("creating an existing topic succeeded")
	}
	bad := "soon"
	if r, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &bad}, "badcfg"); r.Err == nil {
		t.Fatal("invalid config accepted")
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" {
			found = c.MaybeValue() == "3600000" && c.Source == kmsg.ConfigSourceDynamicTopicConfig
		}
	}
	if !found {
		t.Fatalf("retention.ms not described as set: %+v", rc[0].Configs)
	}
	zstd := "zstd"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "compression.type", Value: &zstd}}, "admin"); err != nil {
		t.Fatal(err)
	}
	rc, _ = adm.DescribeTopicConfigs(ctx, "admin")
	for _, c := range rc[0].Configs {
		if c.Key == "compression.type" && c.MaybeValue() != "zstd" {
			t.Fatalf("compression.type = %s after alter", c.MaybeValue())
		}
		if c.Key == "retention.ms" && c.MaybeValue() != "3600000" {
			t.Fatalf("incremental alter dropped retention.ms: %s", c.MaybeValue())
		}
	}
	if _, err := adm.CreatePartitions(ctx, 2, "admin"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "admin")
	if err != nil || len(td["admin"].Partitions) != 4 {
		t.Fatalf("partitions after create-partitions: %v %v", td, err)
	}
	// Produce, then delete records below offset 5 of partition 0.
	prod := newClient(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := makeRecords("admin", 10, "x")
	for _, r := range recs {
		r.Partition = 0
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The broker stored zstd batches, whatever the producer sent.
	rep, err := n.Replicas().Leader("admin", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rep.Log().ReadBytes(0, 1<<20, rep.HighWatermark(), true)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := batch.ParseHeader(b); h.Codec() != batch.CodecZstd {
		t.Fatalf("stored codec %v, want zstd", h.Codec())
	}
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{"admin": {0: {At: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("admin", 0); r.Err != nil || r.LowWatermark != 5 {
		t.Fatalf("delete records: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("admin", 0); o.Offset != 5 {
		t.Fatalf("start offset %d, want 5", o.Offset)
	}
	ends, _ := adm.ListEndOffsets(ctx, "admin")
	if o, _ := ends.Lookup("admin", 0); o.Offset != 10 {
		t.Fatalf("end offset %d, want 10", o.Offset)
	}
	if _, err := adm.DeleteTopics(ctx, "admin"); err != nil {
		t.Fatal(err)
	}
	td, _ = adm.ListTopics(ctx)
	if _, ok := td["admin"]; ok {
		t.Fatal("deleted topic still listed")
	}
	// Re-created under the same name, the topic starts empty.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "admin"); err != nil {
		t.Fatal(err)
	}
	ends, _ = adm.ListEndOffsets(ctx, "admin")
	if o, _ := ends.Lookup("admin", 0); o.Offset != 0 {
		t.Fatalf("re-created topic has end offset %d", o.Offset)
	}
}

// TestBadBatchFailsOnlyItsPartition sends one Produce with a corrupt batch
// for one partition and a good one for another.
func TestBadBatchFailsOnlyItsPartition(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := newClient(t, n.KafkaAddr())
	ctx := ctxT(t, 30*time.Second)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "mixed"); err != nil {
		t.Fatal(err)
	}
	good, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte("ok")}})
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "mixed", topicIDOf(t, cl, "mixed")
	for p, recs := range [][]byte{bad, good} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), recs
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int32]int16{}
	for _, p := range resp.Topics[0].Partitions {
		codes[p.Partition] = p.ErrorCode
	}
	if codes[0] != kerr.CorruptMessage.Code || codes[1] != 0 {
		t.Fatalf("codes %v: want CORRUPT_MESSAGE for 0 and success for 1", codes)
	}
	// And the node keeps serving.
	if _, err := kadm.NewClient(cl).ListEndOffsets(ctx, "mixed"); err != nil {
		t.Fatal(err)
	}
}

// TestLongPollWokenByAppend: a fetch with a long max wait returns as soon
// as a record arrives (the test bounds it well below max wait).
func TestLongPollWokenByAppend(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	topic := "poll"
	cons := newClient(t, n.KafkaAddr(), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Minute),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	prod := newClient(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	if fs := cons.PollFetches(ctx); fs.NumRecords() != 1 {
		t.Fatalf("first poll: %d records, errs %v", fs.NumRecords(), fs.Errors())
	}
	done := make(chan int, 1)
	go func() { done <- cons.PollFetches(ctx).NumRecords() }()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("second")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got != 1 {
			t.Fatalf("second poll got %d records", got)
		}
	case <-ctx.Done():
		t.Fatal("a one-minute long poll was not woken by the append")
	}
}

func batchBuild() ([]byte, error) {
	return batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte("x")}})
}
