package controlplane

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestControllerIdleVisitsNoPartition: with 1,000 partitions led and
// nothing changing, the controller's steps (each renews its lease, runs
// reconcile and the balancer's check) decide no partition and plan no
// balancer pass; one partition's change makes the next step decide that
// partition alone; a broker registering makes it decide every partition
// again. Counts, not times (issue 23: the controller walked every
// partition every LeaseTTL/3).
func TestControllerIdleVisitsNoPartition(t *testing.T) {
	const parts = 1000
	srv := startNATS(t)
	s := openStore(t, connect(t, srv), StoreConfig{Logger: quietLogger()})
	if err := s.RegisterBroker(testCtx(t), broker(1)); err != nil {
		t.Fatal(err)
	}
	c, err := StartController(testCtx(t), s, ControllerConfig{NodeID: 1, LeaseTTL: time.Second, Logger: quietLogger(),
		ReconcileInterval: time.Hour, // only events ask for a pass here
		Balancer:          BalancerConfig{Enable: true, Interval: time.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	eventually(t, 10*time.Second, "the controller", c.IsController)
	if _, err := s.CreateTopic(testCtx(t), "many", parts, 1, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "every partition led", func() bool {
		sts := s.Partitions("many")
		for _, st := range sts {
			if st.Leader != 1 || st.LeaderIncarnation == "" {
				return false
			}
		}
		return len(sts) == parts
	})
	// step waits for the loop to finish a step begun after the call.
	step := func() {
		t.Helper()
		before := c.steps.Load()
		c.Poke()
		eventually(t, 10*time.Second, "a controller step", func() bool { return c.steps.Load() >= before+2 })
	}
	// The controller's own writes come back as events: let them drain.
	settled := false
	for range 50 {
		v, p := c.visits.Load(), c.plans.Load()
		step()
		if c.visits.Load() == v && c.plans.Load() == p {
			settled = true
			break
		}
	}
	if !settled {
		t.Fatal("the controller still decided partitions after 50 steps with nothing changing")
	}

	const idleSteps = 20
	v, p := c.visits.Load(), c.plans.Load()
	for range idleSteps {
		step()
	}
	if dv, dp := c.visits.Load()-v, c.plans.Load()-p; dv != 0 || dp != 0 {
		t.Fatalf("%d idle steps over %d partitions: %d partitions decided, %d balancer plans; want 0 and 0", idleSteps, parts, dv, dp)
	}

	// One partition changes (a write that keeps its state): the next step
	// decides it alone.
	st, _ := s.Partition("many", 7)
	if _, err := s.UpdatePartition(testCtx(t), st); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the changed partition decided", func() bool { return c.visits.Load() > v })
	for range 3 {
		step()
	}
	if dv := c.visits.Load() - v; dv != 1 {
		t.Fatalf("one partition changed: %d partitions decided, want 1", dv)
	}
	if dp := c.plans.Load() - p; dp != 1 {
		t.Fatalf("one partition changed: %d balancer plans, want 1", dp)
	}

	// A broker registers: every partition is decided again.
	s2 := openStore(t, connect(t, srv), StoreConfig{Logger: quietLogger()})
	if err := s2.RegisterBroker(testCtx(t), broker(2)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a pass over every partition", func() bool { return c.visits.Load() >= v+1+parts })
}

// TestControllerSafetyNetPassesOverAnUnchangedCluster: the pass over every
// partition due each ReconcileInterval decides none while nothing it reads
// has changed since the last such pass changed nothing, and decides every
// partition again after a change that publishes no event (a topic's
// election settings, read through ControllerConfig) or one that does.
func TestControllerSafetyNetPassesOverAnUnchangedCluster(t *testing.T) {
	const parts = 200
	srv := startNATS(t)
	s := openStore(t, connect(t, srv), StoreConfig{Logger: quietLogger()})
	if err := s.RegisterBroker(testCtx(t), broker(1)); err != nil {
		t.Fatal(err)
	}
	var unclean atomic.Bool
	c, err := StartController(testCtx(t), s, ControllerConfig{NodeID: 1, LeaseTTL: time.Second, Logger: quietLogger(),
		ReconcileInterval: time.Nanosecond, // every step is due a pass over every partition
		Unclean:           func(string) bool { return unclean.Load() },
		MinISR:            func(string) int { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	eventually(t, 10*time.Second, "the controller", c.IsController)
	if _, err := s.CreateTopic(testCtx(t), "net", parts, 1, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "every partition led", func() bool {
		sts := s.Partitions("net")
		for _, st := range sts {
			if st.Leader != 1 || st.LeaderIncarnation == "" {
				return false
			}
		}
		return len(sts) == parts
	})
	// stepVisits runs one whole controller step begun after the call and
	// returns the partitions it decided.
	stepVisits := func() int64 {
		t.Helper()
		before, v := c.steps.Load(), c.visits.Load()
		c.Poke()
		eventually(t, 10*time.Second, "a controller step", func() bool { return c.steps.Load() >= before+2 })
		return c.visits.Load() - v
	}
	settle := func(what string) {
		t.Helper()
		for range 50 {
			if stepVisits() == 0 {
				return
			}
		}
		t.Fatalf("%s: the due passes still decided partitions after 50 steps with nothing changing", what)
	}
	settle("after the creation")
	for i := range 10 {
		if n := stepVisits(); n != 0 {
			t.Fatalf("idle step %d, a pass over every partition due: %d partitions decided, want 0", i, n)
		}
	}

	// A topic's unclean.leader.election.enable changes with no event: the
	// next due pass decides every partition.
	unclean.Store(true)
	if n := stepVisits() + stepVisits(); n < parts {
		t.Fatalf("after a settings change: %d partitions decided, want every one of %d", n, parts)
	}
	settle("after the settings change")

	// A partition record is written again (a store event): every
	// partition is decided again, as the pass is due. Counted from before
	// the write: the event's own step may run the pass before a step
	// asked for here would begin.
	v := c.visits.Load()
	st, _ := s.Partition("net", 7)
	if _, err := s.UpdatePartition(testCtx(t), st); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a pass over every partition", func() bool {
		c.Poke()
		return c.visits.Load()-v >= parts
	})
}

// TestReconcileWork: partition events mark their partition, broker and
// topic events everything, and past reconcileWorkMax partitions the work
// becomes everything; take forgets what it returns.
func TestReconcileWork(t *testing.T) {
	var w reconcileWork
	if w.observe(Event{Kind: PartitionDeleted}) || w.observe(Event{Kind: TopicDeleted}) {
		t.Fatal("deletions ask for no pass")
	}
	w.observe(Event{Kind: PartitionChanged, Partition: PartitionState{Topic: "a", Partition: 3}})
	w.observe(Event{Kind: PartitionChanged, Partition: PartitionState{Topic: "a", Partition: 3}})
	w.observe(Event{Kind: PartitionChanged, Partition: PartitionState{Topic: "b", Partition: 0}})
	all, parts := w.take()
	if all || len(parts) != 2 {
		t.Fatalf("take = %v, %v; want two partitions", all, parts)
	}
	if all, parts := w.take(); all || parts != nil {
		t.Fatalf("second take = %v, %v; want nothing", all, parts)
	}
	for _, k := range []EventKind{BrokerUp, BrokerDown, TopicCreated, TopicChanged} {
		w.observe(Event{Kind: PartitionChanged, Partition: PartitionState{Topic: "a"}})
		if !w.observe(Event{Kind: k}) {
			t.Fatalf("%v asks for no pass", k)
		}
		if all, parts := w.take(); !all || parts != nil {
			t.Fatalf("after %v: take = %v, %v; want everything", k, all, parts)
		}
	}
	for i := range reconcileWorkMax + 1 {
		w.mark(PartitionKey{"a", int32(i)})
	}
	if all, parts := w.take(); !all || parts != nil {
		t.Fatalf("past %d partitions: take = %v, %d partitions; want everything", reconcileWorkMax, all, len(parts))
	}
}
