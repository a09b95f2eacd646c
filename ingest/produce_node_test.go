package ingest_test

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
