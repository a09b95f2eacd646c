package controlplane

import (
	"errors"
	"testing"
	"time"
)

// remoteFixture opens a store with one broker and a one-partition topic, and
// a RemoteLog on it.
func remoteFixture(t *testing.T) (*Store, *RemoteLog, Topic) {
	t.Helper()
	nc := connect(t, startNATS(t))
	s := openStore(t, nc, StoreConfig{})
	ctx := testCtx(t)
	if err := s.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	top, err := s.CreateTopic(ctx, "tiered", 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := OpenRemoteLog(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rl.Close)
	return s, rl, top
}

func newSeg(top Topic, base, end int64, epoch int32) RemoteSegment {
	return RemoteSegment{TopicID: top.ID, Partition: 0, SegmentID: NewSegmentID(), BaseOffset: base, EndOffset: end,
		MaxTimestamp: 1000 + end, Size: 100, LeaderEpoch: epoch, SegmentEpochs: []EpochEntry{{Epoch: epoch, StartOffset: base}},
		State: CopyStarted, Objects: []string{"k/" + NewSegmentID() + ".log"}}
}

func TestRemoteSegmentLifecycle(t *testing.T) {
	s, rl, top := remoteFixture(t)
	ctx := testCtx(t)
	st, _ := s.Partition("tiered", 0)
	seg, err := rl.PutRemoteSegment(ctx, newSeg(top, 0, 99, st.LeaderEpoch), 0)
	if err != nil {
		t.Fatal(err)
	}
	if seg.Revision == 0 || seg.UpdatedAt.IsZero() {
		t.Fatalf("written segment has revision %d, updated %v", seg.Revision, seg.UpdatedAt)
	}
	if _, ok := rl.RemoteLogStartOffset(top.ID, 0); ok {
		t.Fatal("a CopyStarted segment counts as readable")
	}
	// Creating the same record twice loses.
	if _, err := rl.PutRemoteSegment(ctx, seg, 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	// An illegal transition is refused.
	bad := seg
	bad.State = DeleteFinished
	if _, err := rl.PutRemoteSegment(ctx, bad, seg.Revision); !errors.Is(err, ErrInvalidRemoteSegment) {
		t.Fatalf("CopyStarted -> DeleteFinished: %v", err)
	}
	seg.State = CopyFinished
	fin, err := rl.PutRemoteSegment(ctx, seg, seg.Revision)
	if err != nil {
		t.Fatal(err)
	}
	// A stale revision loses.
	if _, err := rl.PutRemoteSegment(ctx, seg, seg.Revision); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale revision: %v, want ErrConflict", err)
	}
	if start, ok := rl.RemoteLogStartOffset(top.ID, 0); !ok || start != 0 {
		t.Fatalf("remote log start %d %v", start, ok)
	}
	if end, ok := rl.RemoteLogEndOffset(top.ID, 0); !ok || end != 99 {
		t.Fatalf("remote log end %d %v", end, ok)
	}
	fin.State = DeleteStarted
	if fin, err = rl.PutRemoteSegment(ctx, fin, fin.Revision); err != nil {
		t.Fatal(err)
	}
	fin.State = DeleteFinished
	if fin, err = rl.PutRemoteSegment(ctx, fin, fin.Revision); err != nil {
		t.Fatal(err)
	}
	if err := rl.DeleteRemoteSegmentRecord(ctx, fin); err != nil {
		t.Fatal(err)
	}
	if got := rl.ListRemoteSegments(top.ID, 0); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestRemoteSegmentFencing(t *testing.T) {
	s, rl, top := remoteFixture(t)
	ctx := testCtx(t)
	st, _ := s.Partition("tiered", 0)
	old := st.LeaderEpoch
	seg, err := rl.PutRemoteSegment(ctx, newSeg(top, 0, 9, old), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A new leader epoch is elected.
	st.LeaderEpoch++
	if _, err := s.UpdatePartition(ctx, st); err != nil {
		t.Fatal(err)
	}
	seg.State = CopyFinished
	if _, err := rl.PutRemoteSegment(ctx, seg, seg.Revision); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale-epoch CopyFinished: %v, want ErrFenced", err)
	}
	if _, err := rl.PutRemoteSegment(ctx, newSeg(top, 10, 19, old), 0); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale-epoch CopyStarted: %v, want ErrFenced", err)
	}
	// The current epoch may take over the abandoned record (to delete it).
	seg.LeaderEpoch = st.LeaderEpoch
	seg.State = DeleteStarted
	if _, err := rl.PutRemoteSegment(ctx, seg, seg.Revision); err != nil {
		t.Fatalf("current epoch: %v", err)
	}
	// A partition that does not exist fences every write.
	gone := newSeg(top, 0, 9, 100)
	gone.Partition = 7
	if _, err := rl.PutRemoteSegment(ctx, gone, 0); !errors.Is(err, ErrFenced) {
		t.Fatalf("unknown partition: %v, want ErrFenced", err)
	}
}

func TestRemoteSegmentsSeenByAnotherNode(t *testing.T) {
	srv := startNATS(t)
	s1 := openStore(t, connect(t, srv), StoreConfig{})
	ctx := testCtx(t)
	if err := s1.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	top, err := s1.CreateTopic(ctx, "shared", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl1, err := OpenRemoteLog(ctx, s1)
	if err != nil {
		t.Fatal(err)
	}
	defer rl1.Close()
	seg, err := rl1.PutRemoteSegment(ctx, newSeg(top, 0, 9, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A second node opening later loads the record; a later change reaches
	// it through the watch.
	s2 := openStore(t, connect(t, srv), StoreConfig{})
	rl2, err := OpenRemoteLog(ctx, s2)
	if err != nil {
		t.Fatal(err)
	}
	defer rl2.Close()
	if got := rl2.ListRemoteSegments(top.ID, 0); len(got) != 1 || got[0].SegmentID != seg.SegmentID || got[0].State != CopyStarted {
		t.Fatalf("second node loaded %+v", got)
	}
	seg.State = CopyFinished
	if _, err := rl1.PutRemoteSegment(ctx, seg, seg.Revision); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "CopyFinished on the second node", func() bool {
		_, ok := rl2.SegmentForOffset(top.ID, 0, 5)
		return ok
	})
	if ids := rl2.RemoteTopicIDs(); len(ids) != 1 || ids[0] != top.ID {
		t.Fatalf("RemoteTopicIDs %v", ids)
	}
	if ps := rl2.RemotePartitions(top.ID); len(ps) != 1 || ps[0] != 0 {
		t.Fatalf("RemotePartitions %v", ps)
	}
}

func TestRemoteSegmentLookups(t *testing.T) {
	id := NewTopicID()
	mk := func(base, end, maxTs int64, epoch int32, state RemoteSegmentState) RemoteSegment {
		return RemoteSegment{TopicID: id, SegmentID: NewSegmentID(), BaseOffset: base, EndOffset: end,
			MaxTimestamp: maxTs, LeaderEpoch: epoch, State: state}
	}
	segs := []RemoteSegment{
		mk(0, 9, 100, 1, DeleteStarted),
		mk(10, 19, 200, 1, CopyFinished),
		mk(20, 29, 300, 1, CopyFinished),
		mk(20, 29, 300, 2, CopyFinished), // re-uploaded by a later leader
		mk(30, 39, 400, 2, CopyStarted),
	}
	if s, ok := RemoteLogStartOffset(segs); !ok || s != 10 {
		t.Fatalf("start %d %v", s, ok)
	}
	if e, ok := RemoteLogEndOffset(segs); !ok || e != 29 {
		t.Fatalf("end %d %v", e, ok)
	}
	for _, tc := range []struct {
		off       int64
		wantBase  int64
		wantEpoch int32
		ok        bool
	}{{5, 0, 0, false}, {10, 10, 1, true}, {19, 10, 1, true}, {25, 20, 2, true}, {35, 0, 0, false}, {99, 0, 0, false}} {
		s, ok := SegmentForOffset(segs, tc.off)
		if ok != tc.ok || ok && (s.BaseOffset != tc.wantBase || s.LeaderEpoch != tc.wantEpoch) {
			t.Errorf("offset %d: %+v %v", tc.off, s, ok)
		}
	}
	for _, tc := range []struct {
		ts       int64
		wantBase int64
		ok       bool
	}{{0, 10, true}, {200, 10, true}, {201, 20, true}, {300, 20, true}, {301, 0, false}} {
		s, ok := SegmentForTimestamp(segs, tc.ts)
		if ok != tc.ok || ok && s.BaseOffset != tc.wantBase {
			t.Errorf("timestamp %d: %+v %v", tc.ts, s, ok)
		}
	}
	if _, ok := RemoteLogStartOffset(nil); ok {
		t.Error("start of no segments")
	}
}

func TestRemoteSegmentValidation(t *testing.T) {
	_, rl, top := remoteFixture(t)
	ctx := testCtx(t)
	for name, mod := range map[string]func(*RemoteSegment){
		"dash in id":   func(s *RemoteSegment) { s.SegmentID = "a-b" },
		"end < base":   func(s *RemoteSegment) { s.EndOffset = -1 },
		"no topic":     func(s *RemoteSegment) { s.TopicID = TopicID{} },
		"create as CF": func(s *RemoteSegment) { s.State = CopyFinished },
	} {
		s := newSeg(top, 0, 9, 0)
		mod(&s)
		if _, err := rl.PutRemoteSegment(ctx, s, 0); !errors.Is(err, ErrInvalidRemoteSegment) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
