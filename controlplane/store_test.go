package controlplane

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestSingleNodeTopicLifecycle(t *testing.T) {
	ns := startNATS(t)
	s := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	if len(s.ClusterID()) != 22 {
		t.Fatalf("cluster id %q", s.ClusterID())
	}
	if _, err := s.CreateTopic(ctx, "orders", 3, 1, nil); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("create with no brokers: %v, want ErrInvalidReplicationFactor", err)
	}
	if err := s.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	if got := s.Brokers(); !slices.Equal(got, []Broker{broker(1)}) {
		t.Fatalf("Brokers() = %v", got)
	}

	cfgs := map[string]string{"retention.ms": "1000"}
	orders, err := s.CreateTopic(ctx, "orders", 3, 1, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	cfgs["retention.ms"] = "changed by caller" // the store keeps its own copy
	if orders.ID.IsZero() || orders.Partitions != 3 || orders.ReplicationFactor != 1 || orders.Configs["retention.ms"] != "1000" {
		t.Fatalf("created %+v", orders)
	}
	if _, err := s.CreateTopic(ctx, ".dots..name.", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    int32
		rf   int16
		want error
	}{
		{"orders", 1, 1, ErrTopicExists},
		{"bad name", 1, 1, ErrInvalidTopicName},
		{"..", 1, 1, ErrInvalidTopicName},
		{"x", 0, 1, ErrInvalidPartitions},
		{"x", 1, 2, ErrInvalidReplicationFactor},
		{"x", 1, 0, ErrInvalidReplicationFactor},
	} {
		if _, err := s.CreateTopic(ctx, tc.name, tc.p, tc.rf, nil); !errors.Is(err, tc.want) {
			t.Errorf("CreateTopic(%q, %d, %d) = %v, want %v", tc.name, tc.p, tc.rf, err, tc.want)
		}
	}

	// Reads see the writes at once.
	got, ok := s.Topic("orders")
	if !ok || got.ID != orders.ID || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("Topic(orders) = %+v, %v", got, ok)
	}
	if byID, ok := s.TopicByID(orders.ID); !ok || byID.Name != "orders" {
		t.Fatalf("TopicByID = %+v, %v", byID, ok)
	}
	names := []string{}
	for _, tp := range s.Topics() {
		names = append(names, tp.Name)
	}
	if !slices.Equal(names, []string{".dots..name.", "orders"}) {
		t.Fatalf("Topics() = %v", names)
	}
	parts := s.Partitions("orders")
	if len(parts) != 3 {
		t.Fatalf("%d partitions", len(parts))
	}
	for i, p := range parts {
		if p.Partition != int32(i) || p.TopicID != orders.ID || p.Topic != "orders" ||
			!slices.Equal(p.Replicas, []int32{1}) || p.Leader != 1 || p.LeaderEpoch != 0 ||
			!slices.Equal(p.ISR, []int32{1}) || p.PartitionEpoch != 0 || p.Revision == 0 {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}

	// Configs are replaced, not merged.
	if err := s.SetTopicConfigs(ctx, "orders", map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Topic("orders"); !maps.Equal(got.Configs, map[string]string{"cleanup.policy": "compact"}) {
		t.Fatalf("configs = %v", got.Configs)
	}
	if err := s.SetTopicConfigs(ctx, "nope", nil); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("SetTopicConfigs(nope) = %v", err)
	}

	// Growing partitions.
	if err := s.CreatePartitions(ctx, "orders", 3); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("CreatePartitions(3) = %v", err)
	}
	if err := s.CreatePartitions(ctx, "nope", 3); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("CreatePartitions(nope) = %v", err)
	}
	if err := s.CreatePartitions(ctx, "orders", 5); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Topic("orders"); got.Partitions != 5 || got.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("after CreatePartitions: %+v", got)
	}
	if p, ok := s.Partition("orders", 4); !ok || p.Leader != 1 {
		t.Fatalf("Partition(orders, 4) = %+v, %v", p, ok)
	}

	// Delete, then create again: a new id, fresh partitions.
	if err := s.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Topic("orders"); ok {
		t.Fatal("topic still visible after delete")
	}
	if _, ok := s.TopicByID(orders.ID); ok {
		t.Fatal("topic id still visible after delete")
	}
	if ps := s.Partitions("orders"); ps != nil {
		t.Fatalf("partitions after delete: %v", ps)
	}
	if err := s.DeleteTopic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete = %v", err)
	}
	again, err := s.CreateTopic(ctx, "orders", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == orders.ID {
		t.Fatal("re-created topic kept its id")
	}
	if ps := s.Partitions("orders"); len(ps) != 1 || ps[0].TopicID != again.ID || ps[0].PartitionEpoch != 0 {
		t.Fatalf("partitions of re-created topic: %+v", ps)
	}
	if got, _ := s.Topic("orders"); len(got.Configs) != 0 {
		t.Fatalf("re-created topic inherited configs %v", got.Configs)
	}

	// A reopened store loads the same state from the buckets.
	s2 := openStore(t, connect(t, ns), StoreConfig{})
	if s2.ClusterID() != s.ClusterID() {
		t.Fatalf("cluster id changed: %q vs %q", s2.ClusterID(), s.ClusterID())
	}
	if got, ok := s2.Topic("orders"); !ok || got.ID != again.ID {
		t.Fatalf("reopened store: %+v %v", got, ok)
	}
	if _, ok := s2.TopicByID(orders.ID); ok {
		t.Fatal("reopened store sees the deleted topic")
	}

	s.Close()
	s.Close() // idempotent
	if _, err := s.CreateTopic(ctx, "late", 1, 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestTwoStoresShareTopicsThroughWatches(t *testing.T) {
	ns := startNATS(t)
	a := openStore(t, connect(t, ns), StoreConfig{})
	b := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	if a.ClusterID() != b.ClusterID() {
		t.Fatalf("cluster ids differ: %q %q", a.ClusterID(), b.ClusterID())
	}
	aEvents, bEvents := record(a), record(b)
	if err := a.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.RegisterBroker(ctx, broker(2)); err != nil {
		t.Fatal(err)
	}
	both := []Broker{broker(1), broker(2)}
	eventually(t, 10*time.Second, "both stores see both brokers", func() bool {
		return slices.Equal(a.Brokers(), both) && slices.Equal(b.Brokers(), both)
	})

	tp, err := a.CreateTopic(ctx, "shared", 4, 2, map[string]string{"retention.ms": "60000"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b sees the topic and its partitions", func() bool {
		got, ok := b.Topic("shared")
		return ok && got.ID == tp.ID && len(b.Partitions("shared")) == 4
	})
	for _, p := range b.Partitions("shared") {
		if len(p.Replicas) != 2 || p.Leader != p.Replicas[0] {
			t.Fatalf("partition %+v", p)
		}
	}
	eventually(t, 10*time.Second, "b's events", func() bool {
		return bEvents.has(func(e Event) bool { return e.Kind == TopicCreated && e.Topic.ID == tp.ID }) &&
			bEvents.count(func(e Event) bool { return e.Kind == PartitionChanged && e.Partition.TopicID == tp.ID }) == 4 &&
			bEvents.has(func(e Event) bool { return e.Kind == BrokerUp && e.Broker.NodeID == 1 })
	})
	if _, err := b.CreateTopic(ctx, "shared", 1, 1, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("b creating a's topic: %v", err)
	}

	// b changes, a sees.
	if err := b.SetTopicConfigs(ctx, "shared", map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a sees b's configs", func() bool {
		got, _ := a.Topic("shared")
		return got.Configs["retention.ms"] == "1" &&
			aEvents.has(func(e Event) bool { return e.Kind == TopicChanged && e.Topic.Configs["retention.ms"] == "1" })
	})
	if err := b.CreatePartitions(ctx, "shared", 6); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a sees 6 partitions", func() bool {
		got, _ := a.Topic("shared")
		return got.Partitions == 6 && len(a.Partitions("shared")) == 6
	})

	// a deletes, b sees.
	if err := a.DeleteTopic(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b sees the delete", func() bool {
		_, ok := b.Topic("shared")
		return !ok && b.Partitions("shared") == nil &&
			bEvents.has(func(e Event) bool { return e.Kind == TopicDeleted && e.Topic.ID == tp.ID }) &&
			bEvents.count(func(e Event) bool { return e.Kind == PartitionDeleted && e.Partition.TopicID == tp.ID }) == 6
	})

	// Re-created by b: a new id, and a follows.
	again, err := b.CreateTopic(ctx, "shared", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == tp.ID {
		t.Fatal("re-created topic kept its id")
	}
	eventually(t, 10*time.Second, "a sees the new incarnation", func() bool {
		got, ok := a.Topic("shared")
		_, oldVisible := a.TopicByID(tp.ID)
		return ok && got.ID == again.ID && !oldVisible && len(a.Partitions("shared")) == 1
	})
}

func TestUpdatePartitionCASOneWinner(t *testing.T) {
	ns := startNATS(t)
	a := openStore(t, connect(t, ns), StoreConfig{})
	b := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	for i, s := range []*Store{a, b} {
		if err := s.RegisterBroker(ctx, broker(int32(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "a sees both brokers", func() bool { return len(a.Brokers()) == 2 })
	if _, err := a.CreateTopic(ctx, "cas", 1, 2, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b sees the partition", func() bool { _, ok := b.Partition("cas", 0); return ok })

	for round := range 5 {
		pa, _ := a.Partition("cas", 0)
		pb, _ := b.Partition("cas", 0)
		if pa.Revision != pb.Revision {
			t.Fatalf("round %d: stores disagree on the revision: %d vs %d", round, pa.Revision, pb.Revision)
		}
		pa.LeaderEpoch++
		pa.ISR = pa.Replicas[:1]
		pb.LeaderEpoch++
		pb.Leader = pb.Replicas[1]
		pb.ISR = pb.Replicas[1:]

		type result struct {
			st  PartitionState
			err error
		}
		results := make(chan result, 2)
		for _, w := range []struct {
			s  *Store
			st PartitionState
		}{{a, pa}, {b, pb}} {
			go func() {
				st, err := w.s.UpdatePartition(ctx, w.st)
				results <- result{st, err}
			}()
		}
		var winners []PartitionState
		conflicts := 0
		for range 2 {
			r := <-results
			switch {
			case r.err == nil:
				winners = append(winners, r.st)
			case errors.Is(r.err, ErrConflict):
				conflicts++
			default:
				t.Fatalf("round %d: %v", round, r.err)
			}
		}
		if len(winners) != 1 || conflicts != 1 {
			t.Fatalf("round %d: %d winners, %d conflicts", round, len(winners), conflicts)
		}
		w := winners[0]
		if w.PartitionEpoch != pa.PartitionEpoch+1 || w.Revision <= pa.Revision {
			t.Fatalf("round %d: winner %+v", round, w)
		}
		eventually(t, 10*time.Second, "both stores converge on the winner", func() bool {
			ga, _ := a.Partition("cas", 0)
			gb, _ := b.Partition("cas", 0)
			return ga.Revision == w.Revision && gb.Revision == w.Revision &&
				ga.Leader == w.Leader && gb.Leader == w.Leader && slices.Equal(gb.ISR, w.ISR)
		})
	}

	// A stale revision is refused; so is nonsense.
	cur, _ := a.Partition("cas", 0)
	stale := cur
	stale.Revision--
	if _, err := a.UpdatePartition(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	for _, mutate := range []func(*PartitionState){
		func(p *PartitionState) { p.Revision = 0 },
		func(p *PartitionState) { p.Leader = 99 },
		func(p *PartitionState) { p.ISR = []int32{99} },
		func(p *PartitionState) { p.Replicas = []int32{1, 1} },
		func(p *PartitionState) { p.Replicas = nil },
		func(p *PartitionState) { p.AddingReplicas = []int32{99} },
		func(p *PartitionState) { p.AddingReplicas, p.RemovingReplicas = p.Replicas[:1], p.Replicas[:1] },
	} {
		bad := cur.clone()
		mutate(&bad)
		if _, err := a.UpdatePartition(ctx, bad); !errors.Is(err, ErrInvalidPartitionState) {
			t.Fatalf("invalid state %+v: %v", bad, err)
		}
	}
	// A reassignment in progress round-trips through the KV to the other store.
	mv := cur.clone()
	mv.Replicas = append(mv.Replicas, 9)
	mv.AddingReplicas, mv.RemovingReplicas = []int32{9}, mv.Replicas[:1]
	cur, err := a.UpdatePartition(ctx, mv)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b sees the reassignment", func() bool {
		gb, _ := b.Partition("cas", 0)
		return gb.Revision == cur.Revision && slices.Equal(gb.AddingReplicas, []int32{9}) &&
			slices.Equal(gb.RemovingReplicas, mv.Replicas[:1]) && gb.Reassigning()
	})
	// Leader -1 (no leader) is a valid state.
	noLeader := cur.clone()
	noLeader.Leader, noLeader.ISR = -1, nil
	if _, err := a.UpdatePartition(ctx, noLeader); err != nil {
		t.Fatal(err)
	}
}

// TestManualAssignment: CreateTopicWithAssignment and
// CreatePartitionsWithAssignment place replicas as asked, the first leading,
// and refuse an assignment Kafka refuses.
func TestManualAssignment(t *testing.T) {
	ns := startNATS(t)
	s := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	if err := s.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, connect(t, ns), StoreConfig{})
	if err := other.RegisterBroker(ctx, broker(2)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "both brokers", func() bool { return len(s.Brokers()) == 2 })
	if _, err := s.CreateTopicWithAssignment(ctx, "bad", [][]int32{{1, 2}, {1}}, nil); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("uneven replica counts: %v", err)
	}
	if _, err := s.CreateTopicWithAssignment(ctx, "bad", [][]int32{{1, 3}}, nil); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("unregistered broker: %v", err)
	}
	if _, ok := s.Topic("bad"); ok {
		t.Fatal("a refused topic was created")
	}
	topic, err := s.CreateTopicWithAssignment(ctx, "manual", [][]int32{{2, 1}, {1, 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if topic.Partitions != 2 || topic.ReplicationFactor != 2 {
		t.Fatalf("topic %+v", topic)
	}
	if err := s.CreatePartitionsWithAssignment(ctx, "manual", 4, [][]int32{{2, 1}}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("one assignment for two new partitions: %v", err)
	}
	if err := s.CreatePartitionsWithAssignment(ctx, "manual", 3, [][]int32{{1}}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("wrong replication factor: %v", err)
	}
	if err := s.CreatePartitionsWithAssignment(ctx, "manual", 3, [][]int32{{2, 1}}); err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{2, 1}, {1, 2}, {2, 1}}
	if got := s.Partitions("manual"); len(got) != len(want) {
		t.Fatalf("%d partitions, want %d", len(got), len(want))
	}
	for p, st := range s.Partitions("manual") {
		if !slices.Equal(st.Replicas, want[p]) || st.Leader != want[p][0] || !slices.Equal(st.ISR, want[p]) {
			t.Fatalf("partition %d: %s, want replicas %v led by %d", p, stateString(st), want[p], want[p][0])
		}
	}
}

// TestLandedFindsAWriteWhoseAnswerWasLost: a partition write whose answer
// never came (a context that ends with the request on the wire) may have
// been stored; Landed reads the record and says whether it holds the
// write, and the caller's cache takes it. A write that did not land, or
// another one, is not mistaken for it.
func TestLandedFindsAWriteWhoseAnswerWasLost(t *testing.T) {
	srv := startNATS(t)
	a := openStore(t, connect(t, srv), StoreConfig{Logger: quietLogger()})
	b := openStore(t, connect(t, srv), StoreConfig{Logger: quietLogger()})
	ctx := testCtx(t)
	for id, s := range map[int32]*Store{1: a, 2: b} {
		if err := s.RegisterBroker(ctx, broker(id)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "a knows both brokers", func() bool { return len(a.Brokers()) == 2 })
	if _, err := a.CreateTopicWithAssignment(ctx, "landed", [][]int32{{1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	var cur PartitionState
	eventually(t, 10*time.Second, "a leader", func() bool {
		var ok bool
		cur, ok = a.Partition("landed", 0)
		return ok && cur.Leader >= 0
	})
	next := cur
	next.ISR = []int32{cur.Leader}
	if _, ok := a.Landed(ctx, next); ok {
		t.Fatal("Landed before the write")
	}
	// The write, through the other store.
	eventually(t, 10*time.Second, "b knows the partition", func() bool {
		c, ok := b.Partition("landed", 0)
		return ok && c.Revision == cur.Revision
	})
	if _, err := b.UpdatePartition(ctx, next); err != nil {
		t.Fatal(err)
	}
	got, ok := a.Landed(ctx, next)
	if !ok || got.PartitionEpoch != cur.PartitionEpoch+1 || !slices.Equal(got.ISR, next.ISR) || got.Revision <= cur.Revision {
		t.Fatalf("Landed after the write: %v %+v", ok, got)
	}
	if c, _ := a.Partition("landed", 0); c.Revision != got.Revision {
		t.Fatalf("cache at revision %d, the landed write's %d", c.Revision, got.Revision)
	}
	other := cur
	other.ISR = []int32{1, 2}
	other.Leader = 2
	if _, ok := a.Landed(ctx, other); ok {
		t.Fatal("Landed took another write for this one")
	}
}
