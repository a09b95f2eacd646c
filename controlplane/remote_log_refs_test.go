package controlplane

import (
	"slices"
	"testing"
)

// TestObjectReferencesAcrossTopics: a second topic's record listing the
// first one's objects (a fork) keeps them referenced after the first
// topic's record goes, through quarantine and after it; the last listing
// gone, nothing references them.
func TestObjectReferencesAcrossTopics(t *testing.T) {
	s, rl, src := remoteFixture(t)
	ctx := testCtx(t)
	fork, err := s.CreateTopic(ctx, "fork", 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := s.Partition("tiered", 0)
	seg := newSeg(src, 0, 99, st.LeaderEpoch)
	seg.Objects = append(seg.Objects, seg.Objects[0]) // listed twice: counted once
	if seg, err = rl.PutRemoteSegment(ctx, seg, 0); err != nil {
		t.Fatal(err)
	}
	seg.State = CopyFinished
	if seg, err = rl.PutRemoteSegment(ctx, seg, seg.Revision); err != nil {
		t.Fatal(err)
	}
	key := seg.Objects[0]
	if got := rl.ObjectListedBy(key); !slices.Equal(got, []TopicID{src.ID}) {
		t.Fatalf("listed by %v, want the source", got)
	}
	if rl.SharedWithOtherTopics(key, src.ID) {
		t.Fatal("shared before any fork")
	}
	fst, _ := s.Partition("fork", 0)
	ref := RemoteSegment{TopicID: fork.ID, Partition: 0, SegmentID: NewSegmentID(), BaseOffset: 0, EndOffset: 49, Size: 60,
		ObjectEndOffset: 99, ObjectSize: 100, LeaderEpoch: fst.LeaderEpoch, State: CopyFinished, Objects: []string{key}}
	ref, err = rl.RecreateRemoteSegment(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rl.SegmentForOffset(fork.ID, 0, 10); !ok || got.ObjectSize != 100 || got.ObjectEndOffset != 99 {
		t.Fatalf("fork record read back %+v, %v", got, ok)
	}
	if !rl.SharedWithOtherTopics(key, src.ID) || !rl.SharedWithOtherTopics(key, fork.ID) {
		t.Fatal("the object is not shared between the source and the fork")
	}
	// The source's record goes into quarantine, then the entry goes.
	e, err := rl.QuarantineRemoteSegment(ctx, QuarantineEntry{Topic: "tiered", TopicID: src.ID, Partition: 0,
		Reason: ReasonRetention, Segment: &seg}, st.LeaderEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.ListRemoteSegments(src.ID, 0)) != 0 {
		t.Fatal("the source's record is still there")
	}
	if !rl.SharedWithOtherTopics(key, fork.ID) {
		t.Fatal("the source's quarantine entry does not count")
	}
	if err := rl.DeleteQuarantine(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got := rl.ObjectListedBy(key); !slices.Equal(got, []TopicID{fork.ID}) {
		t.Fatalf("after the purge listed by %v, want the fork only", got)
	}
	if rl.SharedWithOtherTopics(key, fork.ID) {
		t.Fatal("the fork's own record counts as another topic's")
	}
	if err := rl.DeleteRemoteSegmentRecord(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if got := rl.ObjectListedBy(key); got != nil {
		t.Fatalf("after every record went listed by %v", got)
	}
	// Object bounds below the record's are refused.
	bad := ref
	bad.SegmentID, bad.ObjectSize = NewSegmentID(), 10
	if _, err := rl.RecreateRemoteSegment(ctx, bad); err == nil {
		t.Fatal("object size below the record's size accepted")
	}
}
