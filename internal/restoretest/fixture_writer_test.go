package restoretest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/restore"
)

// The fixture restore/testdata/bucket-v1 (see restore's
// TestReadsBucketFixtureV1, which holds the same constants).
const (
	fixtureTopic   = "fixture"
	fixtureGroup   = "fixture-group"
	fixtureRecords = 200
	fixtureCommit  = 42
)

var fixtureBase = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestWriteBucketFixture writes the fixture to $SHALE_WRITE_BUCKET_FIXTURE
// (skipped without it).
func TestWriteBucketFixture(t *testing.T) {
	out := os.Getenv("SHALE_WRITE_BUCKET_FIXTURE")
	if out == "" {
		t.Skip("set SHALE_WRITE_BUCKET_FIXTURE=dir to write the fixture")
	}
	dir := t.TempDir()
	n := testnode.Start(t, dir, testnode.WithTiering(100*time.Millisecond))
	ctx := proctest.Context(t, 2*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(30*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cfg := map[string]*string{"remote.storage.enable": kmsg.StringPtr("true"), "segment.bytes": kmsg.StringPtr("1024")}
	if _, err := adm.CreateTopic(ctx, 1, 1, cfg, fixtureTopic); err != nil {
		t.Fatal(err)
	}
	for i := range fixtureRecords {
		r := &kgo.Record{Topic: fixtureTopic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
			Timestamp: fixtureBase.Add(time.Duration(i) * time.Millisecond)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: fixtureTopic, Partition: 0, At: fixtureCommit, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, fixtureGroup, offs); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "remote.storage.enable", Value: kmsg.StringPtr("true")},
		{Name: "segment.bytes", Value: kmsg.StringPtr("1024")}, {Name: "local.retention.bytes", Value: kmsg.StringPtr("-1")},
		{Name: "local.retention.ms", Value: kmsg.StringPtr("-1")}}, "__consumer_offsets"); err != nil {
		t.Fatal(err)
	}
	b, err := fsbucket.New(filepath.Join(dir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.Poll(time.Minute, 200*time.Millisecond, func() bool {
		if _, err := adm.CommitOffsets(ctx, fixtureGroup, offs); err != nil {
			t.Fatal(err)
		}
		inv, err := restore.Scan(ctx, b, "")
		if err != nil {
			t.Fatal(err)
		}
		tiered := map[string]int{}
		for _, img := range inv.Topics {
			for _, ms := range img.Partitions {
				tiered[img.Name] += len(ms)
			}
		}
		return inv.FormatVersion == 1 && tiered[fixtureTopic] >= 5 && tiered[restore.OffsetsTopic] >= 1
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(out, os.DirFS(filepath.Join(dir, "bucket"))); err != nil {
		t.Fatal(err)
	}
}
