package group_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// describeOne describes grp once (waitStable has made sure it is stable).
func describeOne(t *testing.T, adm *kadm.Client, grp string) kadm.DescribedGroup {
	t.Helper()
	described, err := adm.DescribeGroups(proctest.Context(t, 10*time.Second), grp)
	if err != nil {
		t.Fatal(err)
	}
	return described[grp]
}

// A static member that restarts gets a new member id and keeps its
// partitions (KIP-345: no rebalance when nothing changed).
func TestGroupStaticMemberRestart(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, "static", 4)
	seen := testnode.NewSeenSet()
	static := func(id string) kgo.Opt { return kgo.InstanceID(id) }

	var (
		bMu       sync.Mutex
		bAssigned int    // rebalances member b took part in
		bLast     string // the partitions b's last assignment gave it
	)
	bSeen := func() (int, string) {
		bMu.Lock()
		defer bMu.Unlock()
		return bAssigned, bLast
	}
	a := testnode.StartMember(t, addr, "sg", "static", kgo.RangeBalancer(), seen, static("a"))
	testnode.StartMember(t, addr, "sg", "static", kgo.RangeBalancer(), seen, static("b"),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) {
			bMu.Lock()
			defer bMu.Unlock()
			bAssigned++
			bLast = sortedParts(got["static"])
		}))
	testnode.WaitStable(t, adm, "sg", 2)
	before := describeOne(t, adm, "sg")
	// The group is stable once its leader has synced; b's client runs its
	// assignment callback a moment after its own SyncGroup returns. Count
	// b's rebalances only once that callback has seen b's assignment.
	rebalancesBefore := waitCallback(t, before, "b", bSeen)
	var aID string
	var aAssigned []int32
	for _, m := range before.Members {
		if m.InstanceID != nil && *m.InstanceID == "a" {
			aID = m.MemberID
			ca, _ := m.Assigned.AsConsumer()
			aAssigned = ca.Topics[0].Partitions
		}
	}
	if aID == "" {
		t.Fatalf("no member with instance id a: %+v", before.Members)
	}

	// "a" restarts: a static member's Close sends no LeaveGroup, and the
	// new process rejoins under the same instance id within the session.
	a.Stop()
	testnode.StartMember(t, addr, "sg", "static", kgo.RangeBalancer(), seen, static("a"))
	ends := testnode.ProduceN(t, addr, "static", 200, "s")
	// Until the new process joins, the old member of instance a (its
	// Close sent no LeaveGroup) still counts as one of the two in a
	// stable group: wait for the rejoin to replace it.
	after := waitRejoined(t, adm, "sg", "a", aID)
	for _, m := range after.Members {
		if m.InstanceID == nil || *m.InstanceID != "a" {
			continue
		}
		ca, _ := m.Assigned.AsConsumer()
		if fmt.Sprint(ca.Topics[0].Partitions) != fmt.Sprint(aAssigned) {
			t.Fatalf("instance a's assignment moved from %v to %v", aAssigned, ca.Topics[0].Partitions)
		}
	}
	if got, _ := bSeen(); got != rebalancesBefore {
		t.Fatalf("member b was assigned %d more times: a's restart rebalanced the group", got-rebalancesBefore)
	}
	// Both keep consuming: everything is seen and committed.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if seen.Missing([]string{"s"}, 200) == 0 {
			got := testnode.Committed(t, adm, "sg")
			done := true
			for p, end := range ends {
				if o, _ := got.Lookup("static", p); o.At != end {
					done = false
				}
			}
			if done {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("static group did not consume everything: %d missing", seen.Missing([]string{"s"}, 200))
		}
		<-tick.C
	}
}

// waitRejoined waits until grp is stable with two assigned members and
// instance's member id is no longer oldID, and returns that description. A
// static member that rejoins gets a new member id (KIP-345); one that
// keeps oldID for 60 s fails the test.
func waitRejoined(t *testing.T, adm *kadm.Client, grp, instance, oldID string) kadm.DescribedGroup {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		testnode.WaitStable(t, adm, grp, 2)
		d := describeOne(t, adm, grp)
		rejoined := d.State == "Stable"
		for _, m := range d.Members {
			if m.InstanceID != nil && *m.InstanceID == instance && m.MemberID == oldID {
				rejoined = false
			}
		}
		if rejoined {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s kept member id %s; a static rejoin gets a new one", instance, oldID)
		}
		<-tick.C
	}
}

// waitCallback waits until the member of d with the given instance id has
// had its assignment callback run with the partitions d lists for it
// (seen reports the callback's count and last partitions), and returns
// the count.
func waitCallback(t *testing.T, d kadm.DescribedGroup, instance string, seen func() (int, string)) int {
	t.Helper()
	want := ""
	for _, m := range d.Members {
		if m.InstanceID != nil && *m.InstanceID == instance {
			ca, _ := m.Assigned.AsConsumer()
			want = sortedParts(ca.Topics[0].Partitions)
		}
	}
	if want == "" {
		t.Fatalf("no member with instance id %s: %+v", instance, d.Members)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n, last := seen()
		if last == want {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s's assignment callback last saw %s, its assignment is %s", instance, last, want)
		}
		<-tick.C
	}
}

// sortedParts prints ps sorted, so that two listings of one assignment compare equal.
func sortedParts(ps []int32) string {
	return fmt.Sprint(slices.Sorted(slices.Values(ps)))
}
