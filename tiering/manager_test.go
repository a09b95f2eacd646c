package tiering

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/segment/batch"
)

func TestUploadThenLocalDeletion(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 300)
	m := f.manager(t, nil)
	closed := len(f.rep.Log().Segments()) - 1
	if closed < 5 {
		t.Fatalf("only %d closed segments; the test wants several", closed)
	}
	hw := f.rep.HighWatermark()
	m.RunOnce(testCtx(t), true)

	if st := m.Stats(); st.SegmentsUploaded != uint64(closed) || st.UploadFailures != 0 {
		t.Fatalf("stats %+v, want %d uploads", st, closed)
	}
	segs := f.rep.Log().Segments()
	if len(segs) != 1 || !segs[0].Active {
		t.Fatalf("local segments after local.retention.bytes=0: %+v", segs)
	}
	if got := f.rep.LogStartOffset(); got != 0 {
		t.Fatalf("log start %d, want 0 (remote)", got)
	}
	if got := f.rep.LocalLogStartOffset(); got != segs[0].BaseOffset || got == 0 {
		t.Fatalf("local log start %d, active base %d", got, segs[0].BaseOffset)
	}
	recs := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(recs) != closed {
		t.Fatalf("%d records for %d segments", len(recs), closed)
	}
	if end, _ := f.meta.RemoteLogEndOffset(f.topic.ID, 0); end != segs[0].BaseOffset-1 {
		t.Fatalf("remote log end %d, local start %d", end, segs[0].BaseOffset)
	}
	f.checkNoOrphans(t)
	keys := bucketKeys(t, f.fs)
	for _, kind := range []string{".log", ".index", ".timeindex", ".epochs", ".manifest.json"} {
		if n := hasSuffix(keys, kind); n != closed {
			t.Errorf("%d %s objects, want %d", n, kind, closed)
		}
	}
	prefix := PartitionPrefix("tier", "events", f.topic.ID, 0)
	// The remote .log objects hold every offset below the local start, in
	// order, with no gap.
	next := int64(0)
	for _, rec := range recs {
		if rec.BaseOffset != next || !strings.HasPrefix(rec.Objects[0], prefix) {
			t.Fatalf("record %+v: want base %d under %s", rec, next, prefix)
		}
		rc, err := f.fs.GetRange(context.Background(), ObjectKey(rec, KindLog), 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || int64(len(data)) != rec.Size {
			t.Fatalf("log object: %d bytes (record says %d), %v", len(data), rec.Size, err)
		}
		err = batch.Split(data, func(h *batch.Header, _ []byte) error {
			if h.BaseOffset != next {
				t.Fatalf("batch at %d, want %d", h.BaseOffset, next)
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next != rec.EndOffset+1 {
			t.Fatalf("segment ends at %d, record says %d", next-1, rec.EndOffset)
		}
		if len(rec.SegmentEpochs) == 0 {
			t.Fatalf("record %s has no epochs", rec.SegmentID)
		}
	}
	if next != segs[0].BaseOffset || next > hw {
		t.Fatalf("remote data ends at %d, local starts at %d, hw %d", next, segs[0].BaseOffset, hw)
	}
	// A second pass uploads nothing again.
	m.RunOnce(testCtx(t), true)
	if st := m.Stats(); st.SegmentsUploaded != uint64(closed) {
		t.Fatalf("second pass re-uploaded: %+v", st)
	}
}

func TestBucketDownKeepsLocalSegments(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	m := f.manager(t, nil)
	before := f.rep.Log().Segments()
	f.bucket.setDown(true)
	m.RunOnce(testCtx(t), true)
	if st := m.Stats(); st.UploadFailures == 0 || st.SegmentsUploaded != 0 {
		t.Fatalf("stats with the bucket down: %+v", st)
	}
	if after := f.rep.Log().Segments(); len(after) != len(before) || f.rep.LocalLogStartOffset() != 0 {
		t.Fatalf("local segments went while the bucket was down: %d -> %d", len(before), len(after))
	}
	// The failed upload's record could not be cleaned up with the bucket down.
	if recs := f.meta.ListRemoteSegments(f.topic.ID, 0); len(recs) != 1 || recs[0].State != controlplane.DeleteStarted {
		t.Fatalf("records with the bucket down: %+v", recs)
	}
	f.bucket.setDown(false)
	m.RunOnce(testCtx(t), true)
	if segs := f.rep.Log().Segments(); len(segs) != 1 {
		t.Fatalf("%d local segments after the bucket came back", len(segs))
	}
	f.checkNoOrphans(t)
}

func TestUploadCutOffLeavesNoOrphan(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	// The node "dies" right after the first .log put: its context ends, so
	// neither the other puts nor any cleanup happen.
	ctx, kill := context.WithCancel(testCtx(t))
	f.bucket.afterPut = func(key string) {
		if strings.HasSuffix(key, ".log") {
			kill()
		}
	}
	m := f.manager(t, nil)
	m.RunOnce(ctx, false)
	recs := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(recs) != 1 || recs[0].State != controlplane.CopyStarted {
		t.Fatalf("after the cut: %+v", recs)
	}
	cut := recs[0]
	if n := len(bucketKeys(t, f.fs)); n != 1 {
		t.Fatalf("%d objects after the cut, want the one .log", n)
	}
	f.bucket.afterPut = nil
	// A restarted manager, past the grace period, cleans up and re-uploads.
	f.now = f.now.Add(2 * time.Minute)
	m2 := f.manager(t, nil)
	m2.RunOnce(testCtx(t), true)
	for _, rec := range f.meta.ListRemoteSegments(f.topic.ID, 0) {
		if rec.SegmentID == cut.SegmentID {
			t.Fatalf("cut-off record still there: %+v", rec)
		}
	}
	for _, k := range bucketKeys(t, f.fs) {
		if strings.Contains(k, cut.SegmentID) {
			t.Fatalf("object %s of the cut-off upload survived", k)
		}
	}
	f.checkNoOrphans(t)
	if m2.Stats().OrphansDeleted == 0 {
		t.Fatal("reconciler counted nothing")
	}
}

func TestUnreferencedObjectRemovedAfterGrace(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 50)
	m := f.manager(t, nil)
	m.RunOnce(testCtx(t), true)
	stray := f.putStray(t)
	m.RunOnce(testCtx(t), true)
	if _, err := f.fs.Stat(context.Background(), stray); err != nil {
		t.Fatalf("a fresh unreferenced object went before the grace period: %v", err)
	}
	f.now = f.now.Add(2 * time.Minute)
	m.RunOnce(testCtx(t), true)
	f.checkNoOrphans(t)
}

func TestStaleLeaderEpochIsFenced(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 50)
	ctx := testCtx(t)
	st, _ := f.store.Partition("events", 0)
	st.LeaderEpoch++ // a newer leader epoch; the replica still writes at the old one
	if _, err := f.store.UpdatePartition(ctx, st); err != nil {
		t.Fatal(err)
	}
	m := f.manager(t, nil)
	m.RunOnce(ctx, false)
	if st := m.Stats(); st.UploadFailures == 0 || st.SegmentsUploaded != 0 {
		t.Fatalf("stats %+v", st)
	}
	if recs := f.meta.ListRemoteSegments(f.topic.ID, 0); len(recs) != 0 {
		t.Fatalf("fenced leader wrote %+v", recs)
	}
	if len(f.rep.Log().Segments()) < 2 || f.rep.LocalLogStartOffset() != 0 {
		t.Fatal("local segments deleted without an upload")
	}
}

func TestTotalRetentionDeletesRemoteSegments(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	m := f.manager(t, nil)
	m.RunOnce(testCtx(t), false)
	n := len(f.meta.ListRemoteSegments(f.topic.ID, 0))
	if n < 3 {
		t.Fatalf("%d remote segments", n)
	}
	cfgs, _ := f.store.Topic("events")
	cfgs.Configs["retention.ms"] = "1000"
	if err := f.store.SetTopicConfigs(testCtx(t), "events", cfgs.Configs); err != nil {
		t.Fatal(err)
	}
	top, _ := f.store.Topic("events")
	f.rep.SetConfig(config.ResolveTopic(top.Configs, nil))
	f.now = f.now.Add(time.Hour)
	m.RunOnce(testCtx(t), false)
	if recs := f.meta.ListRemoteSegments(f.topic.ID, 0); len(recs) != 0 {
		t.Fatalf("%d records left past retention.ms", len(recs))
	}
	if keys := bucketKeys(t, f.fs); len(keys) != 0 {
		t.Fatalf("objects left past retention.ms: %v", keys)
	}
	if got := m.Stats().RemoteSegmentsDeleted; got != uint64(n) {
		t.Fatalf("deleted %d, want %d", got, n)
	}
	if f.rep.LogStartOffset() != f.rep.LocalLogStartOffset() {
		t.Fatalf("log start %d, local %d", f.rep.LogStartOffset(), f.rep.LocalLogStartOffset())
	}
}

func TestDeletedTopicRemoteDataRemoved(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	m := f.manager(t, func(c *Config) { c.IsController = func() bool { return true } })
	m.RunOnce(testCtx(t), true)
	if len(bucketKeys(t, f.fs)) == 0 {
		t.Fatal("nothing uploaded")
	}
	old := f.topic.ID
	if err := f.store.DeleteTopic(testCtx(t), "events"); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(testCtx(t), true)
	if keys := bucketKeys(t, f.fs); len(keys) != 0 {
		t.Fatalf("deleted topic's objects left: %v", keys)
	}
	if recs := f.meta.ListRemoteSegments(old, 0); len(recs) != 0 {
		t.Fatalf("deleted topic's records left: %d", len(recs))
	}
	// The same name again is a new id with nothing remote.
	top, err := f.store.CreateTopic(testCtx(t), "events", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if top.ID == old || len(f.meta.ListRemoteSegments(top.ID, 0)) != 0 {
		t.Fatalf("re-created topic %v sees old data", top.ID)
	}
	if PartitionPrefix("tier", "events", top.ID, 0) == PartitionPrefix("tier", "events", old, 0) {
		t.Fatal("re-created topic shares the old key prefix")
	}
}

func TestEpochsRoundTrip(t *testing.T) {
	in := []controlplane.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 120}}
	out, err := DecodeEpochs(EncodeEpochs(in))
	if err != nil || len(out) != 2 || out[1] != in[1] {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := DecodeEpochs([]byte("0\n3\n1 2\n")); err == nil {
		t.Fatal("bad count accepted")
	}
}

// A long bucket outage: every pass used to write a CopyStarted record that
// its failed upload turned into a DeleteStarted one it could not finish, one
// more per pass for as long as the outage lasted (issue 16 item 9). Now a
// pass finishes interrupted deletes first and does not upload while one
// fails, so the metadata holds at most the one record; once the bucket is
// back, the uploads resume by themselves.
func TestBucketOutageKeepsMetadataBounded(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	m := f.manager(t, nil)
	f.bucket.setDown(true)
	for range 20 {
		m.RunOnce(testCtx(t), false)
	}
	if recs := f.meta.ListRemoteSegments(f.topic.ID, 0); len(recs) > 1 {
		t.Fatalf("%d remote segment records after 20 passes with the bucket down, want at most 1", len(recs))
	}
	if st := m.Stats(); !st.BucketUnreachable {
		t.Fatalf("stats with the bucket down: %+v", st)
	}
	if f.rep.LocalLogStartOffset() != 0 {
		t.Fatal("local segments went while the bucket was down")
	}
	f.bucket.setDown(false)
	m.RunOnce(testCtx(t), false)
	if st := m.Stats(); st.BucketUnreachable || st.SegmentsUploaded == 0 {
		t.Fatalf("stats after the bucket came back: %+v", st)
	}
	if segs := f.rep.Log().Segments(); len(segs) != 1 {
		t.Fatalf("%d local segments after the bucket came back", len(segs))
	}
	f.checkNoOrphans(t)
}

// A segment's .log Put is retried by objstore.WithRetries: its body seeks
// (it was an io.LimitReader, which WithRetries cannot rewind, so a single
// 503 failed the upload).
func TestSegmentPutIsRetried(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	f.bucket.transientPuts, f.bucket.transientSuffix = 3, ".log"
	m := f.manager(t, func(c *Config) {
		c.Bucket = objstore.WithRetries(f.bucket, objstore.RetryConfig{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	})
	m.RunOnce(testCtx(t), false)
	if st := m.Stats(); st.UploadFailures != 0 || st.SegmentsUploaded == 0 {
		t.Fatalf("stats after three 503s on .log Puts: %+v, want no failure", st)
	}
	f.checkNoOrphans(t)
	// What was uploaded is whole: each .log object is its local file.
	for _, rec := range f.meta.ListRemoteSegments(f.topic.ID, 0) {
		a, err := f.fs.Stat(testCtx(t), rec.Objects[0])
		if err != nil || a.Size != rec.Size {
			t.Fatalf("%s: %+v %v, want %d bytes", rec.Objects[0], a, err, rec.Size)
		}
	}
}
