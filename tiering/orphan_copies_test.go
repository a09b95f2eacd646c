package tiering

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/segment"
)

func TestOrphanCopies(t *testing.T) {
	current := []segment.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 40}, {Epoch: 2, StartOffset: 50}}
	seg := func(id string, base, end int64, epochs ...controlplane.EpochEntry) controlplane.RemoteSegment {
		return controlplane.RemoteSegment{SegmentID: id, BaseOffset: base, EndOffset: end, State: controlplane.CopyFinished, SegmentEpochs: epochs}
	}
	old := seg("old", 0, 99, controlplane.EpochEntry{Epoch: 0, StartOffset: 0}, controlplane.EpochEntry{Epoch: 1, StartOffset: 40})
	a := seg("a", 0, 59, controlplane.EpochEntry{Epoch: 0, StartOffset: 0}, controlplane.EpochEntry{Epoch: 1, StartOffset: 40}, controlplane.EpochEntry{Epoch: 2, StartOffset: 50})
	b := seg("b", 60, 119, controlplane.EpochEntry{Epoch: 2, StartOffset: 60})
	ids := func(segs []controlplane.RemoteSegment) (out []string) {
		for _, s := range segs {
			out = append(out, s.SegmentID)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		remote []controlplane.RemoteSegment
		epochs []segment.EpochEntry
		want   []string
	}{
		{"covered by the lineage's copies", []controlplane.RemoteSegment{old, a, b}, current, []string{"old"}},
		{"not yet covered: the only copy of 60-99", []controlplane.RemoteSegment{old, a}, current, nil},
		{"in the lineage", []controlplane.RemoteSegment{a, b}, current, nil},
		{"below the history", []controlplane.RemoteSegment{old, a, b}, []segment.EpochEntry{{Epoch: 2, StartOffset: 50}}, nil},
		{"no history", []controlplane.RemoteSegment{old, a, b}, nil, nil},
	} {
		got := ids(OrphanCopies(tc.remote, tc.epochs))
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A copy an older leader uploaded of records the current log replaced (item
// 5's orphan of the lineage) is removed, record and objects, once the
// current leader's own copies hold its offsets; the lineage's copies stay.
// Failed before: it stayed until retention (and cost its bytes meanwhile).
func TestOrphanCopyOutsideTheLineageRemoved(t *testing.T) {
	f := newFixture(t, nil)
	e := f.rep.LeaderEpoch()
	f.produce(t, 10) // epoch e: [0, 100)
	f.rep.SetLeadership(true, e+2)
	f.produce(t, 30) // epoch e+2 from 100
	// The leader of epoch e+1 wrote its own records from 100, uploaded
	// [100, 149] and lost them in an unclean election.
	ctx := testCtx(t)
	prefix := PartitionPrefix("tier", "events", f.topic.ID, 0)
	id := controlplane.NewSegmentID()
	rec := controlplane.RemoteSegment{TopicID: f.topic.ID, Partition: 0, SegmentID: id, BaseOffset: 100, EndOffset: 149,
		MaxTimestamp: f.now.UnixMilli(), Size: 10, LeaderEpoch: e + 1, State: controlplane.CopyStarted,
		SegmentEpochs: []controlplane.EpochEntry{{Epoch: e + 1, StartOffset: 100}}}
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		key := SegmentKey(prefix, 100, e+1, id, k)
		if err := f.fs.Put(ctx, key, bytes.NewReader([]byte("old leader")), 10); err != nil {
			t.Fatal(err)
		}
		rec.Objects = append(rec.Objects, key)
	}
	var err error
	if rec, err = f.meta.PutRemoteSegment(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	rec.State = controlplane.CopyFinished
	if _, err = f.meta.PutRemoteSegment(ctx, rec, rec.Revision); err != nil {
		t.Fatal(err)
	}
	m := f.manager(t, nil)
	m.RunOnce(ctx, false)
	for _, r := range f.meta.ListRemoteSegments(f.topic.ID, 0) {
		if r.SegmentID == id {
			t.Fatalf("the old leader's copy [100, 149] is still recorded in %v", r.State)
		}
		if !SameLineage(f.rep.Log().Epochs(), r.SegmentEpochs, r.BaseOffset, r.EndOffset) {
			t.Fatalf("a copy outside the lineage is left: %+v", r)
		}
	}
	for _, k := range rec.Objects {
		if _, err := f.fs.Stat(context.Background(), k); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("object %s of the removed copy: %v", k, err)
		}
	}
	if !Covered(f.meta.ListRemoteSegments(f.topic.ID, 0), 0, 149, f.rep.Log().Epochs()) {
		t.Fatal("the lineage's copies do not cover [0, 149]")
	}
	if st := m.Stats(); st.OrphansDeleted != 1 || st.RemoteSegmentsDeleted != 0 {
		t.Fatalf("stats %+v: want one orphan removed, nothing by retention", st)
	}
	f.checkNoOrphans(t)
}
