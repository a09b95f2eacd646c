package restore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/restore"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering"
)

// The fixture: testdata/bucket-v1 is a bucket written by a Shale node at
// format version 1 (TestWriteBucketFixture, run once by hand): one tiered
// topic of one partition whose record i has key k<i>, value v<i> and
// timestamp fixtureBase+i ms, and __consumer_offsets tiered with group
// fixture-group committed at offset fixtureCommit (written by
// internal/restoretest's TestWriteBucketFixture, once, by hand). The test keeps reading
// it as the format moves on: a bucket written by this version stays
// restorable (docs/bucket-format.md).
const (
	fixtureTopic   = "fixture"
	fixtureGroup   = "fixture-group"
	fixtureRecords = 200
	fixtureCommit  = 42
)

var fixtureBase = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestReadsBucketFixtureV1: the committed version-1 bucket scans, plans
// and replays: its records, their offsets and timestamps, and the group's
// committed offset. Without its _shale folder (a bucket written before
// markers and descriptors) it still plans, with no descriptor.
func TestReadsBucketFixtureV1(t *testing.T) {
	ctx := context.Background()
	b, err := fsbucket.New(copyFixture(t, false))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := restore.Scan(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	if inv.FormatVersion != 1 || len(inv.Problems) != 0 {
		t.Fatalf("format %d, problems %v", inv.FormatVersion, inv.Problems)
	}
	var topic, offsets *restore.TopicImage
	for _, img := range inv.Topics {
		switch img.Name {
		case fixtureTopic:
			topic = img
		case restore.OffsetsTopic:
			offsets = img
		}
	}
	if topic == nil || offsets == nil || topic.Descriptor == nil || topic.Descriptor.Partitions != 1 ||
		topic.Descriptor.Configs["segment.bytes"] != "1024" {
		t.Fatalf("topics %+v", inv.Topics)
	}
	plan := restore.PlanPartition(topic.Partitions[0], nil)
	if plan.LogStart != 0 || len(plan.Gaps) != 0 || plan.NextOffset < 100 || plan.HighWatermark != fixtureRecords {
		t.Fatalf("plan: start %d next %d gaps %v high watermark %d", plan.LogStart, plan.NextOffset, plan.Gaps, plan.HighWatermark)
	}
	next := int64(0)
	for _, m := range plan.Segments {
		data, err := os.ReadFile(filepath.Join(b.Dir(), m.Objects[tiering.KindLog].Key))
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Split(data, func(h *batch.Header, raw []byte) error {
			recs, err := batch.Records(raw, 1<<20)
			if err != nil {
				return err
			}
			for _, r := range recs {
				off := h.BaseOffset + int64(r.OffsetDelta)
				ts := h.FirstTimestamp + r.TimestampDelta
				if off != next || !bytes.Equal(r.Value, fmt.Appendf(nil, "v%d", off)) || ts != fixtureBase.Add(time.Duration(off)*time.Millisecond).UnixMilli() {
					return fmt.Errorf("offset %d (want %d): value %q timestamp %d", off, next, r.Value, ts)
				}
				next++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if next != plan.NextOffset {
		t.Fatalf("read up to %d, planned %d", next, plan.NextOffset)
	}
	l := restore.NewOffsetLog()
	for _, ms := range offsets.Partitions {
		for _, m := range restore.PlanPartition(ms, nil).Segments {
			data, err := os.ReadFile(filepath.Join(b.Dir(), m.Objects[tiering.KindLog].Key))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Add(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := l.Offsets(fixtureTopic); len(got) != 1 || got[0].Group != fixtureGroup || got[0].Offset != fixtureCommit {
		t.Fatalf("group offsets %+v", got)
	}

	bare, err := fsbucket.New(copyFixture(t, true))
	if err != nil {
		t.Fatal(err)
	}
	inv, err = restore.Scan(ctx, bare, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range inv.Topics {
		if inv.FormatVersion != 0 || img.Descriptor != nil {
			t.Fatalf("without _shale: format %d, descriptor %+v", inv.FormatVersion, img.Descriptor)
		}
	}
	if len(inv.Topics) != 2 {
		t.Fatalf("without _shale: %d topics", len(inv.Topics))
	}
}

// copyFixture copies testdata/bucket-v1 to a temporary directory, without
// its _shale folder when bare.
func copyFixture(t *testing.T, bare bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bucket")
	if err := os.CopyFS(dir, os.DirFS("testdata/bucket-v1")); err != nil {
		t.Fatal(err)
	}
	if bare {
		if err := os.RemoveAll(filepath.Join(dir, "_shale")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
