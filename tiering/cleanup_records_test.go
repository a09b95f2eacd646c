package tiering

import (
	"slices"
	"testing"

	"github.com/shale-io/shale/controlplane"
)

// The controller removes the records nothing needs any more: the log start
// record of a deleted topic (after its segments), and the cold-tier record
// of a broker that left the cluster (not registered, no replica assigned);
// a broker that is only down keeps its record while it holds replicas, and
// a live broker whose record went records it again. Failed before: both
// records stayed forever.
func TestControllerRemovesStaleRecords(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 100)
	m := f.manager(t, func(c *Config) {
		c.IsController = func() bool { return true }
		c.Location, c.SharedBucket = "s3://shared", true
	})
	ctx := testCtx(t)
	if err := m.Register(ctx); err != nil {
		t.Fatal(err)
	}
	// Node 2 is down but holds a replica; node 7 left for good.
	for _, node := range []int32{2, 7} {
		if err := f.meta.PutColdTier(ctx, controlplane.ColdTier{NodeID: node, Shared: true, Location: "s3://shared"}); err != nil {
			t.Fatal(err)
		}
	}
	ps, _ := f.store.Partition("events", 0)
	ps.Replicas, ps.ISR = []int32{1, 2}, []int32{1}
	if _, err := f.store.UpdatePartition(ctx, ps); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, true)
	if _, err := m.DeleteRecordsBefore(ctx, f.rep, 50); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.meta.RemoteLogStart(f.topic.ID, 0); !ok {
		t.Fatal("DeleteRecords recorded no log start")
	}
	nodes := func() (out []int32) {
		for _, t := range f.meta.ColdTiers() {
			out = append(out, t.NodeID)
		}
		return out
	}
	if got := nodes(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("cold-tier records of nodes %v, want 1 and 2 (7 left the cluster)", got)
	}
	// This node's own record went (taken for gone while its registration
	// lapsed): the next pass records it again.
	if err := f.meta.DeleteColdTier(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx, false)
	if got := nodes(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("cold-tier records of nodes %v after this node's went, want 1 and 2", got)
	}

	old := f.topic.ID
	if err := f.store.DeleteTopic(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // segments, then the log start record
		m.RunOnce(ctx, true)
	}
	if recs := f.meta.ListRemoteSegments(old, 0); len(recs) != 0 {
		t.Fatalf("deleted topic's records left: %d", len(recs))
	}
	if _, ok := f.meta.RemoteLogStart(old, 0); ok {
		t.Fatal("the deleted topic's log start record is left")
	}
	if got := f.meta.LogStartPartitions(); len(got) != 0 {
		t.Fatalf("log start records left: %v", got)
	}
}

func TestRemovedBrokerTiers(t *testing.T) {
	tiers := []controlplane.ColdTier{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}, {NodeID: 4}}
	live := []controlplane.Broker{{NodeID: 1}, {NodeID: 3}}
	got := RemovedBrokerTiers(tiers, 1, live, map[int32]bool{2: true})
	if !slices.Equal(got, []int32{4}) {
		t.Fatalf("removed %v, want [4] (2 holds a replica, 1 and 3 are live)", got)
	}
	if got := RemovedBrokerTiers(tiers, 4, nil, nil); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("removed %v, want every other node", got)
	}
}
