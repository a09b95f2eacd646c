package tiering

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment/batch"
)

const testGrace = time.Hour

// quarantineFixture is a fixture whose topic and broker default quarantine
// remote deletes for testGrace, and a controller manager.
func quarantineFixture(t *testing.T) (*fixture, *Manager) {
	t.Helper()
	grace := fmt.Sprint(testGrace.Milliseconds())
	f := newFixture(t, map[string]string{config.RemoteDeleteGraceMs: grace})
	m := f.manager(t, func(c *Config) {
		c.IsController = func() bool { return true }
		c.TopicDefaults = map[string]string{config.RemoteDeleteGraceMs: grace}
	})
	return f, m
}

// setTopicConfig sets one config of "events" in the store and on the replica.
func (f *fixture) setTopicConfig(t *testing.T, name, value string) {
	t.Helper()
	top, _ := f.store.Topic("events")
	top.Configs[name] = value
	if err := f.store.SetTopicConfigs(testCtx(t), "events", top.Configs); err != nil {
		t.Fatal(err)
	}
	top, _ = f.store.Topic("events")
	f.rep.SetConfig(config.ResolveTopic(top.Configs, nil))
}

// checkNoOrphansWithQuarantine is checkNoOrphans with quarantined objects
// counted as referenced (and required to exist).
func (f *fixture) checkNoOrphansWithQuarantine(t *testing.T) {
	t.Helper()
	f.checkReferenced(t, f.meta.QuarantinedObjects())
}

// remoteRecords reads every record of the partition's remote segments from
// the bucket, in offset order, as "offset=value", from the log start on.
func (f *fixture) remoteRecords(t *testing.T) []string {
	t.Helper()
	var out []string
	start := f.rep.LogStartOffset()
	for _, rec := range f.meta.ListRemoteSegments(f.topic.ID, 0) {
		rc, err := f.fs.GetRange(context.Background(), rec.Objects[0], 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Split(b, func(h *batch.Header, raw []byte) error {
			recs, err := batch.Records(raw, 1<<20)
			for _, r := range recs {
				if off := h.BaseOffset + int64(r.OffsetDelta); off >= start {
					out = append(out, fmt.Sprintf("%d=%s", off, r.Value))
				}
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// produced is what f.produce(t, n) wrote, as remoteRecords reads it, for
// offsets [from, to).
func produced(from, to int64) []string {
	var out []string
	for off := from; off < to; off++ {
		out = append(out, fmt.Sprintf("%d=value-%d-%d", off, off/10, off%10))
	}
	return out
}

// TestRetentionDeleteIsQuarantinedAndRestored: remote retention that
// deletes within remote.delete.grace.ms leaves the objects in the bucket,
// listed in quarantine (and the orphan check clean); a restore refused
// while retention would delete the segments again is allowed once it is
// raised, and brings back the records with the log start; past the grace
// the controller purges the objects and the bucket holds only what the
// metadata references. It failed before the quarantine: retention deleted
// the objects at once.
func TestRetentionDeleteIsQuarantinedAndRestored(t *testing.T) {
	f, m := quarantineFixture(t)
	ctx := testCtx(t)
	f.produce(t, 100)
	m.RunOnce(ctx, true)
	before := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(before) < 3 {
		t.Fatalf("%d remote segments", len(before))
	}
	end := before[len(before)-1].EndOffset + 1
	if got, want := f.remoteRecords(t), produced(0, end); !slices.Equal(got, want) {
		t.Fatalf("remote records before: %d, want %d", len(got), len(want))
	}
	keys := bucketKeys(t, f.fs)

	f.setTopicConfig(t, config.RetentionMs, "1000")
	f.now = f.now.Add(time.Hour)
	m.RunOnce(ctx, true) // a reconcile pass too: the orphan cleanup must leave them
	if recs := f.meta.ListRemoteSegments(f.topic.ID, 0); len(recs) != 0 {
		t.Fatalf("%d records left past retention.ms", len(recs))
	}
	if got := bucketKeys(t, f.fs); !slices.Equal(got, keys) {
		t.Fatalf("retention deleted objects inside the grace: %d objects left of %d", len(got), len(keys))
	}
	q := f.meta.QuarantineEntries()
	if len(q) != len(before) {
		t.Fatalf("%d quarantine entries, want %d", len(q), len(before))
	}
	for i, e := range q {
		if e.Reason != controlplane.ReasonRetention || e.State != controlplane.Quarantined || e.ID != before[i].SegmentID ||
			e.Topic != "events" || !e.PurgeAfter.Equal(e.QuarantinedAt.Add(testGrace)) {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	f.checkNoOrphansWithQuarantine(t)
	if ls := f.rep.LogStartOffset(); ls < end {
		t.Fatalf("log start %d after retention, want >= %d", ls, end)
	}

	// Retention would delete them again: refused, with a note.
	sel := QuarantineSelector{Topic: "events", Partition: -1}
	if _, err := m.RequestRestore(ctx, sel); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, false)
	for _, e := range f.meta.QuarantineEntries() {
		if e.State != controlplane.Quarantined || e.Note == "" {
			t.Fatalf("restore under retention.ms=1000 not refused: %+v", e)
		}
	}
	if len(f.meta.ListRemoteSegments(f.topic.ID, 0)) != 0 {
		t.Fatal("a refused restore put records back")
	}

	f.setTopicConfig(t, config.RetentionMs, "-1")
	if _, err := m.RequestRestore(ctx, sel); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, true)
	if q := f.meta.QuarantineEntries(); len(q) != 0 {
		t.Fatalf("%d entries left after the restore: %+v", len(q), q[0])
	}
	if ls := f.rep.LogStartOffset(); ls != 0 {
		t.Fatalf("log start %d after the restore, want 0", ls)
	}
	if got, want := f.remoteRecords(t), produced(0, end); !slices.Equal(got, want) {
		t.Fatalf("remote records after the restore: %d, want %d", len(got), len(want))
	}
	if st := m.Stats(); st.QuarantineRestored != uint64(len(before)) {
		t.Fatalf("stats %+v", st)
	}
	f.checkNoOrphans(t)

	// Deleted again, then past the grace: purged, the bucket clean.
	f.setTopicConfig(t, config.RetentionMs, "1000")
	m.RunOnce(ctx, false)
	if len(f.meta.QuarantineEntries()) != len(before) {
		t.Fatalf("%d entries, want %d", len(f.meta.QuarantineEntries()), len(before))
	}
	f.now = f.now.Add(testGrace - time.Minute)
	m.RunOnce(ctx, true)
	if len(f.meta.QuarantineEntries()) != len(before) {
		t.Fatal("purged before the grace")
	}
	f.now = f.now.Add(2 * time.Minute)
	m.RunOnce(ctx, true)
	if q := f.meta.QuarantineEntries(); len(q) != 0 {
		t.Fatalf("%d entries left past the grace", len(q))
	}
	for _, k := range keys {
		if _, err := f.fs.Stat(ctx, k); err == nil {
			t.Fatalf("object %s left past the grace", k)
		}
	}
	f.checkNoOrphans(t)
	if st := m.Stats(); st.QuarantinePurged != uint64(len(before)) {
		t.Fatalf("stats %+v", st)
	}
}

// TestDeleteRecordsUndoneFromQuarantine: the segments DeleteRecords put
// below the log start are quarantined; restoring them moves the recorded
// log start back to their first offset, and every record reads again.
func TestDeleteRecordsUndoneFromQuarantine(t *testing.T) {
	f, m := quarantineFixture(t)
	ctx := testCtx(t)
	f.produce(t, 100)
	m.RunOnce(ctx, true)
	segs := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(segs) < 3 {
		t.Fatalf("%d remote segments", len(segs))
	}
	end := segs[len(segs)-1].EndOffset + 1
	cut := segs[2].BaseOffset + 1 // inside the third segment
	if _, err := m.DeleteRecordsBefore(ctx, f.rep, cut); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, false)
	q := f.meta.QuarantineEntries()
	if len(q) != 2 || q[0].Reason != controlplane.ReasonDeleteRecords || q[1].ID != segs[1].SegmentID {
		t.Fatalf("entries %+v", q)
	}
	if ls := f.rep.LogStartOffset(); ls != cut {
		t.Fatalf("log start %d, want %d", ls, cut)
	}
	if got, want := f.remoteRecords(t), produced(cut, end); !slices.Equal(got, want) {
		t.Fatalf("remote records after DeleteRecords: %d, want %d", len(got), len(want))
	}
	// Restoring only the first would leave a gap: refused.
	if _, err := m.RequestRestore(ctx, QuarantineSelector{Topic: "events", Partition: 0, IDs: []string{segs[0].SegmentID}}); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, false)
	if q := f.meta.QuarantineEntries(); q[0].State != controlplane.Quarantined || q[0].Note == "" {
		t.Fatalf("a restore leaving a gap was not refused: %+v", q[0])
	}
	if _, err := m.RequestRestore(ctx, QuarantineSelector{Topic: "events", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, false)
	if q := f.meta.QuarantineEntries(); len(q) != 0 {
		t.Fatalf("entries left: %+v", q)
	}
	if s, ok := f.meta.RemoteLogStart(f.topic.ID, 0); !ok || s != 0 {
		t.Fatalf("recorded log start %d %v, want 0", s, ok)
	}
	if ls := f.rep.LogStartOffset(); ls != 0 {
		t.Fatalf("log start %d after the restore, want 0", ls)
	}
	if got, want := f.remoteRecords(t), produced(0, end); !slices.Equal(got, want) {
		t.Fatalf("remote records after the restore: %d, want %d", len(got), len(want))
	}
	f.checkNoOrphans(t)
}

// TestDeletedTopicQuarantined: a deleted topic's remote data waits in
// quarantine for the broker default grace; it cannot be restored into the
// remote log (the topic is gone), can be purged at once, and nothing is
// left after.
func TestDeletedTopicQuarantined(t *testing.T) {
	f, m := quarantineFixture(t)
	ctx := testCtx(t)
	f.produce(t, 100)
	m.RunOnce(ctx, true)
	keys := bucketKeys(t, f.fs)
	n := len(f.meta.ListRemoteSegments(f.topic.ID, 0))
	if err := f.store.DeleteTopic(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, true)
	if got := bucketKeys(t, f.fs); !slices.Equal(got, keys) {
		t.Fatalf("topic deletion deleted objects inside the grace: %d left of %d", len(got), len(keys))
	}
	q := f.meta.QuarantineEntries()
	if len(q) != n || q[0].Reason != controlplane.ReasonTopicDeleted || q[0].Topic != "events" {
		t.Fatalf("%d entries, want %d: %+v", len(q), n, q)
	}
	if _, err := m.RequestRestore(ctx, QuarantineSelector{Topic: "events", Partition: -1}); err == nil {
		t.Fatal("restore of a deleted topic's segments accepted")
	}
	if done, err := m.Purge(ctx, QuarantineSelector{Topic: "events", Partition: -1}); err != nil || len(done) != n {
		t.Fatalf("purge: %d, %v", len(done), err)
	}
	if got := bucketKeys(t, f.fs); len(got) != 0 {
		t.Fatalf("objects left after the purge: %v", got)
	}
}

// TestUnreferencedObjectQuarantined: the reconciler's orphan cleanup
// quarantines an unreferenced object past the orphan grace, and the purge
// after remote.delete.grace.ms deletes it.
func TestUnreferencedObjectQuarantined(t *testing.T) {
	f, m := quarantineFixture(t)
	ctx := testCtx(t)
	f.produce(t, 30)
	m.RunOnce(ctx, true)
	stray := f.putStray(t)
	f.now = f.now.Add(2 * time.Minute) // past OrphanGrace
	m.RunOnce(ctx, true)
	q := f.meta.QuarantineEntries()
	if len(q) != 1 || q[0].Reason != controlplane.ReasonOrphanObject || q[0].Objects[0] != stray {
		t.Fatalf("entries %+v", q)
	}
	if _, err := f.fs.Stat(ctx, stray); err != nil {
		t.Fatalf("stray object deleted inside the grace: %v", err)
	}
	f.checkNoOrphansWithQuarantine(t)
	f.now = f.now.Add(testGrace + time.Minute)
	m.RunOnce(ctx, true)
	if _, err := f.fs.Stat(ctx, stray); err == nil {
		t.Fatal("stray object left past the grace")
	}
	f.checkNoOrphans(t)
}

// TestRestoreOfADeletedTopicIsPurged: entries whose restore was requested
// but whose topic was deleted before its leader answered are purged past
// their grace, not kept for ever.
func TestRestoreOfADeletedTopicIsPurged(t *testing.T) {
	f, m := quarantineFixture(t)
	ctx := testCtx(t)
	f.produce(t, 50)
	m.RunOnce(ctx, true)
	f.setTopicConfig(t, config.RetentionMs, "1000")
	f.now = f.now.Add(time.Hour)
	m.RunOnce(ctx, false)
	n := len(f.meta.QuarantineEntries())
	if n == 0 {
		t.Fatal("nothing quarantined")
	}
	if _, err := m.RequestRestore(ctx, QuarantineSelector{Topic: "events", Partition: -1}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.DeleteTopic(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, true)
	if q := f.meta.QuarantineEntries(); len(q) != n || q[0].State != controlplane.Restoring {
		t.Fatalf("entries before the grace: %+v", q)
	}
	f.now = f.now.Add(testGrace + time.Minute)
	m.RunOnce(ctx, true)
	if q := f.meta.QuarantineEntries(); len(q) != 0 {
		t.Fatalf("%d entries left past the grace", len(q))
	}
	if keys := bucketKeys(t, f.fs); len(keys) != 0 {
		t.Fatalf("objects left: %v", keys)
	}
}
