package compat

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// rawListOffsetsV0 sends one ListOffsets v0 on its own connection, as
// Burrow's sarama does, and decodes the answer.
func rawListOffsetsV0(t *testing.T, addr, topic string, ts int64, maxNum int32) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 0, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.MaxNumOffsets = 0, ts, maxNum
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("burrow-like")).AppendRequest(nil, req, 9)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		t.Fatalf("ListOffsets v0 (timestamp %d, max %d): no answer: %v", ts, maxNum, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != 9 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets v0 (timestamp %d, max %d): error %d", ts, maxNum, p.ErrorCode)
	}
	return p
}

// TestListOffsetsV0: ListOffsets v0 (issue 26 item 3), which Burrow sends,
// is answered as Kafka 3.x answers it: LATEST with max 1 is [HW], with a
// larger max the log end then the segments' base offsets descending;
// EARLIEST the log start; a timestamp before every segment's file time an
// empty list. ApiVersions says v0 is served, and sarama with an old
// Version (which sends v0) reads the same offsets. Before v0 was served,
// the node closed the connection ("unsupported API version").
func TestListOffsetsV0(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	ctx := proctest.Context(t, 90*time.Second)
	cl := testnode.Client(t, addr, kgo.DefaultProduceTopic("v0"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": new("4096")}, "v0")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute).UnixMilli()
	const records = 60
	for i := range records {
		// One batch each, 1 KiB: several segments of about 4 KiB.
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(make([]byte, 0, 1024), "%01024d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := n.Replicas().Leader("v0", 0)
	if err != nil {
		t.Fatal(err)
	}
	segs := rep.Log().Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments; the test needs several", len(segs))
	}
	if hw := rep.HighWatermark(); hw != records {
		t.Fatalf("high watermark %d after %d acks=all records", hw, records)
	}
	want := []int64{records}
	for i := len(segs) - 1; i >= 0; i-- {
		want = append(want, segs[i].BaseOffset)
	}
	if segs[len(segs)-1].Size == 0 { // Kafka lists the log end only when the active segment holds data
		want = want[1:]
	}

	if got := rawListOffsetsV0(t, addr, "v0", -1, 1).OldStyleOffsets; !slices.Equal(got, []int64{records}) {
		t.Fatalf("LATEST, max 1: %v, want [%d]", got, records)
	}
	if got := rawListOffsetsV0(t, addr, "v0", -1, 1000).OldStyleOffsets; !slices.Equal(got, want) {
		t.Fatalf("LATEST, max 1000: %v, want %v", got, want)
	}
	if got := rawListOffsetsV0(t, addr, "v0", -1, 3).OldStyleOffsets; !slices.Equal(got, want[:3]) {
		t.Fatalf("LATEST, max 3: %v, want %v", got, want[:3])
	}
	if got := rawListOffsetsV0(t, addr, "v0", -2, 5).OldStyleOffsets; !slices.Equal(got, []int64{0}) {
		t.Fatalf("EARLIEST: %v, want [0]", got)
	}
	if got := rawListOffsetsV0(t, addr, "v0", before, 5).OldStyleOffsets; len(got) != 0 {
		t.Fatalf("a timestamp before every segment file: %v, want []", got)
	}
	if got := rawListOffsetsV0(t, addr, "v0", time.Now().Add(time.Hour).UnixMilli(), 2).OldStyleOffsets; !slices.Equal(got, want[:2]) {
		t.Fatalf("a timestamp after every segment file, max 2: %v, want %v", got, want[:2])
	}

	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range av.ApiKeys {
		if k.ApiKey == kmsg.ListOffsets.Int16() && k.MinVersion != 0 {
			t.Fatalf("ApiVersions: ListOffsets %d-%d, want v0 served", k.MinVersion, k.MaxVersion)
		}
	}

	// sarama configured for Kafka 0.10.0 sends ListOffsets v0, as Burrow does.
	c := saramaConfig()
	c.Version = sarama.V0_10_0_0
	sc, err := sarama.NewClient([]string{addr}, c)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if off, err := sc.GetOffset("v0", 0, sarama.OffsetNewest); err != nil || off != records {
		t.Fatalf("sarama (v0) newest offset %d, %v, want %d", off, err, records)
	}
	if off, err := sc.GetOffset("v0", 0, sarama.OffsetOldest); err != nil || off != 0 {
		t.Fatalf("sarama (v0) oldest offset %d, %v, want 0", off, err)
	}
}
