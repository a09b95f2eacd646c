package broker_test

import (
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

func TestProduceConsumeEveryCodec(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			if _, err := adm.CreateTopic(proctest.Context(t, 10*time.Second), 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			prod := testnode.Client(t, n.KafkaAddr(), kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()))
			sent := testnode.Records(topic, 500, name)
			if err := prod.ProduceSync(proctest.Context(t, 30*time.Second), sent...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			testnode.CheckSame(t, sent, testnode.ConsumeAll(t, n.KafkaAddr(), topic, len(sent)))
		})
	}
}

func TestRestartKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir)
	topic := "durable"
	prod := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	sent := testnode.Records(topic, 300, "before")
	if err := prod.ProduceSync(proctest.Context(t, 30*time.Second), sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	if err := n.Close(proctest.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	n2 := testnode.Start(t, dir)
	testnode.CheckSame(t, sent, testnode.ConsumeAll(t, n2.KafkaAddr(), topic, len(sent)))
	// The idempotent producer state came back too: a new producer appends after the old records.
	prod2 := testnode.Client(t, n2.KafkaAddr())
	more := testnode.Records(topic, 10, "after")
	if err := prod2.ProduceSync(proctest.Context(t, 30*time.Second), more...).FirstErr(); err != nil {
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
	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	ctx := proctest.Context(t, 30*time.Second)
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
	prod := testnode.Client(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := testnode.Records("admin", 10, "x")
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
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 30*time.Second)
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
	rt.Topic, rt.TopicID = "mixed", testnode.TopicID(t, cl, "mixed")
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
	cons := testnode.Client(t, n.KafkaAddr(), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Minute),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	prod := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(proctest.Context(t, 20*time.Second), &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx := proctest.Context(t, 30*time.Second)
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
