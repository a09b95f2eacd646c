package admin_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/segment/batch"
)

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
