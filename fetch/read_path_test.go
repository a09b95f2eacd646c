package fetch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
)

// TestListOffsetsAndEpochs covers timestamps, MAX_TIMESTAMP, earliest and
// latest, OffsetForLeaderEpoch, and a fetch outside the log.
func TestListOffsetsAndEpochs(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), testnode.WithTopicDefault("segment.bytes", "4096"))
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx := proctest.Context(t, 30*time.Second)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ts"); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	// 100 records, one per produce, timestamps base+i seconds, except a spike at 50.
	for i := 0; i < 100; i++ {
		ts := base.Add(time.Duration(i) * time.Second)
		if i == 50 {
			ts = base.Add(10 * time.Minute)
		}
		r := &kgo.Record{Topic: "ts", Value: make([]byte, 200), Timestamp: ts}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if segs := len(mustLeader(t, n, "ts").Log().Segments()); segs < 3 {
		t.Fatalf("want several segments so the time index spans files, got %d", segs)
	}
	for _, c := range []struct {
		ts   time.Time
		want int64
	}{
		{base.Add(-time.Minute), 0},
		{base, 0},
		{base.Add(10*time.Second + time.Millisecond), 11},
		{base.Add(70 * time.Second), 50}, // the spike at offset 50 is the first record >= 70 s
		{base.Add(11 * time.Minute), -1},
	} {
		lo, err := adm.ListOffsetsAfterMilli(ctx, c.ts.UnixMilli(), "ts")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := lo.Lookup("ts", 0)
		want := c.want
		if want == -1 {
			want = 100 // kadm reports the end offset when no record is at or after the time
		}
		if got.Err != nil || got.Offset != want {
			t.Fatalf("offset for %v: %d (%v), want %d", c.ts.Sub(base), got.Offset, got.Err, want)
		}
	}
	// MAX_TIMESTAMP (-3).
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "ts"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.Offset != 50 || p.Timestamp != base.Add(10*time.Minute).UnixMilli() {
		t.Fatalf("max timestamp: offset %d ts %d", p.Offset, p.Timestamp)
	}
	// OffsetForLeaderEpoch: epoch 0 ends at the log end; a stale current epoch is fenced.
	oreq := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "ts"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.LeaderEpoch, op.CurrentLeaderEpoch = 0, 0
	ot.Partitions = append(ot.Partitions, op)
	oreq.Topics = append(oreq.Topics, ot)
	oresp, err := oreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := oresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 100 {
		t.Fatalf("epoch 0: %+v", p)
	}
	oreq.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
	if oresp, err = oreq.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if p := oresp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("future current epoch: %+v", p)
	}
	// Fetch past the end: OFFSET_OUT_OF_RANGE.
	freq := kmsg.NewPtrFetchRequest()
	freq.MaxBytes, freq.ReplicaID = 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "ts", testnode.TopicID(t, cl, "ts")
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = 500, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp, err := freq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := fresp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 100 {
		t.Fatalf("fetch past the end: %+v", p)
	}
}

// TestAcksZeroAndFetchLimits: acks=0 writes are stored; a fetch honours the
// partition byte limit but always returns at least one whole batch.
func TestAcksZeroAndFetchLimits(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 30*time.Second)
	prod := testnode.Client(t, n.KafkaAddr(), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(),
		kgo.DefaultProduceTopic("fire"), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	for i := 0; i < 50; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rep := mustLeaderWait(t, n, "fire", 50)
	// A fetch whose partition limit is smaller than one batch still gets one batch (KIP-74).
	cl := testnode.Client(t, n.KafkaAddr())
	freq := kmsg.NewPtrFetchRequest()
	freq.MaxBytes, freq.ReplicaID = 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "fire", testnode.TopicID(t, cl, "fire")
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 10
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp, err := freq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := fresp.Topics[0].Partitions[0]
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(p.RecordBatches); err != nil || rb.NumRecords != 1 || len(p.RecordBatches) != int(rb.Length)+12 {
		t.Fatalf("want exactly one whole batch: %d bytes, err %v", len(p.RecordBatches), err)
	}
	_ = rep
}

func mustLeader(t *testing.T, n interface {
	Replicas() *replica.Manager
}, topic string) *partition.Replica {
	t.Helper()
	rep, err := n.Replicas().Leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// mustLeaderWait polls until partition 0 of topic holds want records.
func mustLeaderWait(t *testing.T, n interface {
	Replicas() *replica.Manager
}, topic string, want int64) *partition.Replica {
	t.Helper()
	var rep *partition.Replica
	proctest.Eventually(t, 20*time.Second, fmt.Sprintf("partition %s-0 to reach %d records", topic, want), func() bool {
		r, err := n.Replicas().Leader(topic, 0)
		rep = r
		return err == nil && r.HighWatermark() >= want
	})
	return rep
}
