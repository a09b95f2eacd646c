package replica_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/replica"
)

// TestRunReconcilesOnlyChangedPartitions: with 200 partitions open, a
// change to one partition's record makes Run visit that partition alone,
// and what it applies is what a full Reconcile would: the new role and
// epoch, and the fetcher entry (followed from the new leader, then no
// more once this node leads again). Issue 23: every PartitionChanged event
// made a pass over every partition; after a broker loss at 10,000
// partitions the surviving nodes spent 30-40% of their CPU on them.
func TestRunReconcilesOnlyChangedPartitions(t *testing.T) {
	const parts = 200
	dir := t.TempDir()
	ctx := proctest.Context(t, 60*time.Second)
	// Node 2 is registered (its own store), so that a fetcher from it can
	// start; it runs no replicas.
	st := natsStores(t, ctx, dir, 1, 2)[0]
	if err := proctest.WaitFor(10*time.Second, func() bool { return len(st.Brokers()) == 2 }); err != nil {
		t.Fatal("broker 2 not seen by broker 1's store")
	}
	if _, err := st.CreateTopic(ctx, "wide", parts, 2, nil); err != nil { // every partition on node 1
		t.Fatal(err)
	}
	m := replica.New(managerConfig(1, st.OwnIncarnation(), filepath.Join(dir, "n1", "logs")), st)
	runManager(t, m)
	// Run's first pass is a full one (a change may have landed before it
	// subscribed).
	if err := proctest.WaitFor(10*time.Second, func() bool { return replica.Visits(m) >= parts }); err != nil {
		t.Fatalf("Run's first pass: %d visits", replica.Visits(m))
	}
	settled := replica.Visits(m)
	// The records' leaders at creation (each partition's first replica).
	initial := map[int32]int32{}
	a, b := int32(-1), int32(-1)
	for _, ps := range st.Partitions("wide") {
		initial[ps.Partition] = ps.Leader
		if ps.Leader == 2 && a < 0 {
			a = ps.Partition
		}
		if ps.Leader == 1 && b < 0 {
			b = ps.Partition
		}
	}
	if a < 0 || b < 0 {
		t.Fatalf("no partition led by each node at creation: %v", initial)
	}
	followed := func(p int32) (leader int32, ok bool) {
		name := fmt.Sprintf("wide-%d", p)
		for _, f := range m.Fetchers() {
			if slices.Contains(f.Partitions, name) {
				return f.Leader, true
			}
		}
		return -1, false
	}
	elect := func(p, leader int32) {
		t.Helper()
		ps, _ := st.Partition("wide", p)
		ps.Leader, ps.LeaderEpoch = leader, ps.LeaderEpoch+1
		if _, err := st.UpdatePartition(ctx, ps); err != nil {
			t.Fatal(err)
		}
		rep, _ := m.Local("wide", p)
		if err := proctest.WaitFor(10*time.Second, func() bool {
			from, ok := followed(p)
			return rep.LeaderEpoch() == ps.LeaderEpoch && rep.IsLeader() == (leader == 1) && (leader == 1) != ok && (!ok || from == leader)
		}); err != nil {
			from, ok := followed(p)
			t.Fatalf("wide-%d after electing %d at epoch %d: leader %v at epoch %d, followed %v from %d",
				p, leader, ps.LeaderEpoch, rep.IsLeader(), rep.LeaderEpoch(), ok, from)
		}
	}
	// a: followed from node 2, then led here.
	if from, ok := followed(a); !ok || from != 2 {
		t.Fatalf("wide-%d not followed from node 2 at creation", a)
	}
	elect(a, 1)
	if got := replica.Visits(m) - settled; got != 1 {
		t.Fatalf("one partition changed: Run visited %d partitions, want 1", got)
	}
	// b: led here, then followed from node 2, then led here again.
	elect(b, 2)
	elect(b, 1)
	if got := replica.Visits(m) - settled; got != 3 {
		t.Fatalf("three changes of one partition each: Run visited %d partitions, want 3", got)
	}
	for p, leader := range initial {
		r, ok := m.Local("wide", p)
		if !ok {
			t.Fatalf("wide-%d not open", p)
		}
		if want := leader == 1 || p == a; r.IsLeader() != want {
			t.Fatalf("wide-%d leader %v, want %v", p, r.IsLeader(), want)
		}
	}
}
