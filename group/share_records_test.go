package group

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// shareGroupsSeen records what the coordinator hands to ShareGroups.
type shareGroupsSeen struct {
	mu     sync.Mutex
	loaded map[string][]ShareRecord
}

func (s *shareGroupsSeen) ListShareGroups() []ShareGroupListing { return nil }
func (s *shareGroupsSeen) DeleteShareGroup(string) (bool, bool, error) {
	return false, false, nil
}
func (s *shareGroupsSeen) LoadShareGroups(_ int32, gs map[string][]ShareRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loaded = gs
}
func (s *shareGroupsSeen) UnloadShareGroups(int32) {}

// appendShare appends recs for grp, retrying while the partition loads.
func appendShare(t *testing.T, c *Coordinator, grp string, recs ...ShareRecord) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.AppendShareRecords(context.Background(), grp, recs)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrLoadInProgress) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A share group's records are kept per key (a tombstone deletes), survive
// a compaction, come back to ShareGroups when the partition loads again,
// and the group is not a classic group (ListGroups and DescribeGroups).
func TestShareRecordsCompactAndLoad(t *testing.T) {
	dir := t.TempDir()
	rep := openOffsetsReplica(t, dir)
	c := newTestCoordinator(t, rep, 1<<40)
	c.SetShareGroups(&shareGroupsSeen{})
	meta, member := consumerKey(11, "sg"), consumerKey(keyShareMember, "sg", "m1")
	appendShare(t, c, "sg", ShareRecord{Key: meta, Value: []byte("epoch-1")}, ShareRecord{Key: member, Value: []byte("m1")})
	appendShare(t, c, "sg", ShareRecord{Key: member}, ShareRecord{Key: meta, Value: []byte("epoch-2")})
	if err := c.AppendShareRecords(context.Background(), "sg", []ShareRecord{{Key: offsetKey("sg", topicPartition{"t", 0})}}); err == nil {
		t.Fatal("an offset key appended as a share record")
	}
	if err := c.AppendShareRecords(context.Background(), "sg", []ShareRecord{{Key: consumerKey(11, "other")}}); err == nil {
		t.Fatal("another group's key appended")
	}
	commitOne(t, c, "cg", "t", 0, 3)
	if lg := listGroupsOnce(t, c); len(lg.Groups) != 1 || lg.Groups[0].Group != "cg" {
		t.Fatalf("ListGroups lists the share group as a classic one: %+v", lg.Groups)
	}
	if d := describe(t, c, "sg"); d.State != StateDead.String() {
		t.Fatalf("DescribeGroups of the share group: %+v", d)
	}

	sh, ok := c.rt.Loaded(0)
	if !ok || !sh.compacting.CompareAndSwap(false, true) {
		t.Fatal("partition 0 not loaded, or compacting")
	}
	if err := c.compact(context.Background(), sh); err != nil {
		t.Fatal(err)
	}
	if total, byGroup := logRecords(t, rep); total != 2 || byGroup["sg"] != 1 {
		t.Fatalf("after compaction: %d records %v, want the share group's metadata and cg's offset", total, byGroup)
	}

	c.Close()
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	rep2 := openOffsetsReplica(t, dir)
	t.Cleanup(func() { rep2.Close() })
	c2 := newTestCoordinator(t, rep2, 1<<40)
	seen := &shareGroupsSeen{}
	c2.SetShareGroups(seen)
	deadline := time.Now().Add(20 * time.Second)
	for err := c2.ShareReady("sg"); err != nil; err = c2.ShareReady("sg") {
		if !errors.Is(err, ErrLoadInProgress) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	got := seen.loaded["sg"]
	if len(seen.loaded) != 1 || len(got) != 1 || !bytes.Equal(got[0].Key, meta) || string(got[0].Value) != "epoch-2" {
		t.Fatalf("loaded share groups: %+v", seen.loaded)
	}
}
