package tiering

import (
	"slices"
	"testing"
)

// TestSharedObjectsOutliveTheirTopic: a second topic's records list the
// first topic's objects (a fork). Deleting the first topic (deletes at
// once: remote.delete.grace.ms 0) deletes only the objects no fork lists;
// deleting the fork then deletes the rest, and the bucket is empty.
func TestSharedObjectsOutliveTheirTopic(t *testing.T) {
	f := newFixture(t, nil)
	m := f.manager(t, func(c *Config) { c.IsController = func() bool { return true } })
	ctx := testCtx(t)
	f.produce(t, 100)
	m.RunOnce(ctx, true)
	segs := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(segs) < 3 {
		t.Fatalf("%d remote segments, want several", len(segs))
	}
	fork, err := f.store.CreateTopic(ctx, "fork", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var shared []string
	for _, s := range segs[:2] {
		rec := s
		rec.TopicID, rec.Revision = fork.ID, 0
		if _, err := f.meta.RecreateRemoteSegment(ctx, rec); err != nil {
			t.Fatal(err)
		}
		shared = append(shared, s.Objects...)
	}
	slices.Sort(shared)
	if err := f.store.DeleteTopic(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, true)
	m.RunOnce(ctx, true)
	if got := bucketKeys(t, f.fs); !slices.Equal(got, shared) {
		t.Fatalf("after the source's deletion the bucket holds %d objects, want the %d the fork lists:\n%v\n%v", len(got), len(shared), got, shared)
	}
	if n := m.Stats().SharedObjectsKept; n < uint64(len(shared)) {
		t.Fatalf("SharedObjectsKept %d, want at least %d", n, len(shared))
	}
	if err := f.store.DeleteTopic(ctx, "fork"); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, true)
	if got := bucketKeys(t, f.fs); len(got) != 0 {
		t.Fatalf("after the fork's deletion objects are left: %v", got)
	}
}
