package controlplane

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func brokersOf(ids ...int32) []Broker {
	var out []Broker
	for _, id := range ids {
		out = append(out, Broker{NodeID: id, Host: "h", Port: 1})
	}
	return out
}

func racked(racks map[int32]string) []Broker {
	var out []Broker
	for id, r := range racks {
		out = append(out, Broker{NodeID: id, Host: "h", Port: 1, Rack: r})
	}
	slices.SortFunc(out, func(a, b Broker) int { return int(a.NodeID - b.NodeID) })
	return out
}

// renderMoves renders moves as "kind t-p from->to [replicas]".
func renderMoves(plan BalancePlan) []string {
	var out []string
	for _, m := range plan.Moves {
		s := fmt.Sprintf("%s %s-%d %d->%d", m.Kind, m.Topic, m.Partition, m.From, m.To)
		if m.Replicas != nil {
			s += fmt.Sprint(" ", m.Replicas)
		}
		out = append(out, s)
	}
	return out
}

// applyPlan returns parts after the plan's moves, with every reassignment
// completed and every leader move done.
func applyPlan(parts []PartitionState, plan BalancePlan) []PartitionState {
	out := make([]PartitionState, len(parts))
	for i, st := range parts {
		out[i] = st.clone()
		for _, m := range plan.Moves {
			if m.Topic != st.Topic || m.Partition != st.Partition {
				continue
			}
			if m.Kind == MoveLeader {
				out[i].Leader = m.To
			} else {
				out[i].Replicas, out[i].ISR = slices.Clone(m.Replicas), slices.Clone(m.Replicas)
				if !slices.Contains(m.Replicas, out[i].Leader) {
					out[i].Leader = m.Replicas[0]
				}
			}
		}
	}
	return out
}

func replicaCounts(parts []PartitionState) map[int32]int {
	c := map[int32]int{}
	for _, st := range parts {
		for _, r := range st.TargetReplicas() {
			c[r]++
		}
	}
	return c
}

// evenTopic is n partitions of RF rf on brokers 1..b, Kafka's spread,
// every replica in the ISR and the preferred one leading.
func evenTopic(topic string, n int32, rf int16, b int) []PartitionState {
	var parts []PartitionState
	for p, r := range AssignReplicas(brokersOf(seq(b)...), n, rf, 0) {
		parts = append(parts, PartitionState{Topic: topic, Partition: int32(p), Leader: r[0], Replicas: r, ISR: slices.Clone(r)})
	}
	return parts
}

func seq(n int) []int32 {
	var out []int32
	for i := 1; i <= n; i++ {
		out = append(out, int32(i))
	}
	return out
}

func TestPlanBalanceBalancedDoesNothing(t *testing.T) {
	parts := append(evenTopic("a", 12, 3, 3), evenTopic("b", 12, 3, 3)...)
	plan := PlanBalance(parts, BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 5, Skew: 2})
	if len(plan.Moves) != 0 || !plan.Balanced() || plan.Skew() != 0 {
		t.Fatalf("moves %v balanced %v skew %d", renderMoves(plan), plan.Balanced(), plan.Skew())
	}
}

// TestPlanBalanceScaleOut: three brokers join a 3-node cluster holding
// 2x12 partitions of RF 3; pass after pass (each completing its moves)
// within the budget, the plan spreads replicas within the skew and
// preferred replicas evenly, then stops.
func TestPlanBalanceScaleOut(t *testing.T) {
	parts := append(evenTopic("a", 12, 3, 3), evenTopic("b", 12, 3, 3)...)
	v := BalanceView{Brokers: brokersOf(1, 2, 3, 4, 5, 6), MaxMoves: 4, Skew: 2}
	passes := 0
	for ; passes < 100; passes++ {
		plan := PlanBalance(parts, v)
		copying := 0
		for _, m := range plan.Moves {
			if m.Kind == MoveSkew || m.Kind == MoveDrain {
				copying++
			}
		}
		if copying > v.MaxMoves {
			t.Fatalf("pass %d: %d copying moves, budget %d", passes, copying, v.MaxMoves)
		}
		if len(plan.Moves) == 0 {
			if !plan.Balanced() {
				t.Fatalf("pass %d: no move but not balanced: %+v", passes, plan)
			}
			break
		}
		parts = applyPlan(parts, plan)
	}
	if passes == 100 {
		t.Fatal("the plan never settles")
	}
	counts, pref := replicaCounts(parts), map[int32]int{}
	for _, st := range parts {
		pref[st.Replicas[0]]++
		if len(st.Replicas) != 3 || len(slices.Compact(slices.Sorted(slices.Values(st.Replicas)))) != 3 {
			t.Fatalf("%s-%d: replicas %v", st.Topic, st.Partition, st.Replicas)
		}
	}
	for b := int32(1); b <= 6; b++ {
		if counts[b] < 11 || counts[b] > 13 {
			t.Errorf("broker %d hosts %d of 72 replicas, want 11..13 (skew 2): %v", b, counts[b], counts)
		}
		if pref[b] != 4 {
			t.Errorf("broker %d is preferred by %d of 24 partitions, want 4: %v", b, pref[b], pref)
		}
	}
}

func TestPlanBalanceBudgetAndCost(t *testing.T) {
	parts := evenTopic("a", 6, 2, 2) // 6 partitions on brokers 1, 2
	sizes := map[int32]int64{0: 500, 1: -1, 2: 100, 3: 300, 4: 200, 5: 50}
	bytes := func(st PartitionState) int64 { return sizes[st.Partition] }
	v := BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 2, Skew: 1, Bytes: bytes}
	plan := PlanBalance(parts, v)
	var skew []string
	for _, m := range plan.Moves {
		if m.Kind == MoveSkew {
			skew = append(skew, fmt.Sprintf("a-%d:%d", m.Partition, m.Bytes))
		}
	}
	// The cheapest first: 5 (50 bytes) from broker 1, then 2 (100 bytes)
	// from broker 2; the budget of 2 stops there.
	if want := []string{"a-5:50", "a-2:100"}; !slices.Equal(skew, want) {
		t.Fatalf("skew moves %v, want %v (all: %v)", skew, want, renderMoves(plan))
	}
	if plan.Pending == 0 {
		t.Errorf("moves left by the budget are not reported pending")
	}

	// A reassignment in progress uses the budget.
	inFlight := slices.Clone(parts)
	inFlight[0].Replicas, inFlight[0].AddingReplicas, inFlight[0].RemovingReplicas = []int32{3, 2, 1}, []int32{3}, []int32{1}
	plan = PlanBalance(inFlight, v)
	n := 0
	for _, m := range plan.Moves {
		if m.Kind == MoveSkew {
			n++
			if m.Partition == 0 {
				t.Errorf("a partition in progress is planned again: %v", m)
			}
		}
	}
	if n != 1 || plan.InFlight != 1 {
		t.Errorf("in flight %d, skew moves %d (%v), want 1 and 1", plan.InFlight, n, renderMoves(plan))
	}

	// Unknown sizes go last.
	v.MaxMoves = 10
	plan = PlanBalance(parts, v)
	for _, m := range plan.Moves {
		if m.Partition == 1 && m.Kind == MoveSkew {
			t.Errorf("the partition of unknown size moved while known ones could: %v", renderMoves(plan))
		}
	}
}

func TestPlanBalanceDrain(t *testing.T) {
	parts := []PartitionState{
		{Topic: "t", Partition: 0, Leader: 4, Replicas: []int32{4, 1, 2}, ISR: []int32{4, 1, 2}},
		{Topic: "t", Partition: 1, Leader: 1, Replicas: []int32{1, 4, 3}, ISR: []int32{1, 4, 3}},
		{Topic: "t", Partition: 2, Leader: 2, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}},
	}
	draining := map[int32]bool{4: true}
	cases := []struct {
		name     string
		parts    []PartitionState
		brokers  []Broker
		maxMoves int
		want     []string
		blocked  int
		pending  int
	}{
		{"leadership first, then each replica to the least loaded host", parts, brokersOf(1, 2, 3, 4), 5,
			[]string{"leader t-0 4->1", "drain t-0 4->3 [3 1 2]", "drain t-1 4->2 [1 2 3]"}, 0, 0},
		{"budget 1: the rest waits", parts, brokersOf(1, 2, 3, 4), 1,
			[]string{"leader t-0 4->1", "drain t-0 4->3 [3 1 2]"}, 0, 1},
		{"three replicas, three hosts left but broker 3 is shutting down: blocked, nothing moves",
			parts, append(brokersOf(1, 2, 4), Broker{NodeID: 3, Host: "h", Port: 1, ControlledShutdown: true}), 5,
			[]string{"leader t-0 4->1"}, 2, 0},
		{"rack-aware: the host that keeps the racks spread wins",
			[]PartitionState{{Topic: "t", Partition: 0, Leader: 1, Replicas: []int32{1, 4}, ISR: []int32{1, 4}}},
			racked(map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}), 5,
			[]string{"drain t-0 4->3 [1 3]"}, 0, 0},
		{"a replica on a fenced broker holds the drain",
			[]PartitionState{{Topic: "t", Partition: 0, Leader: 1, Replicas: []int32{1, 4, 5}, ISR: []int32{1, 4}}},
			brokersOf(1, 2, 3, 4), 5, nil, 1, 0},
		{"a draining leader with no other ISR member keeps leading until one joins",
			[]PartitionState{{Topic: "t", Partition: 0, Leader: 4, Replicas: []int32{4, 1}, ISR: []int32{4}}},
			brokersOf(1, 2, 4), 5, []string{"drain t-0 4->2 [2 1]"}, 0, 0},
	}
	for _, c := range cases {
		plan := PlanBalance(c.parts, BalanceView{Brokers: c.brokers, Draining: draining, MaxMoves: c.maxMoves, Skew: 2})
		if got := renderMoves(plan); !slices.Equal(got, c.want) || len(plan.Blocked) != c.blocked || plan.Pending != c.pending {
			t.Errorf("%s:\n moves %v, want %v\n blocked %q, want %d\n pending %d, want %d", c.name, got, c.want, plan.Blocked, c.blocked,
				plan.Pending, c.pending)
		}
	}
}

func TestCheckDrain(t *testing.T) {
	parts := evenTopic("t", 3, 3, 3)
	err := CheckDrain(parts, brokersOf(1, 2, 3), map[int32]bool{3: true})
	if !errors.Is(err, ErrDrainImpossible) || !strings.Contains(err.Error(), "only 2 brokers would be left") {
		t.Errorf("RF 3 on three brokers, one draining: %v", err)
	}
	if err := CheckDrain(parts, brokersOf(1, 2, 3, 4), map[int32]bool{3: true}); err != nil {
		t.Errorf("a fourth broker takes them: %v", err)
	}
	err = CheckDrain(evenTopic("t", 2, 1, 1), brokersOf(1), map[int32]bool{1: true})
	if !errors.Is(err, ErrDrainImpossible) {
		t.Errorf("draining the last replicas: %v", err)
	}
	if err := CheckDrain(parts, brokersOf(1, 2, 3, 4, 5, 6), map[int32]bool{4: true, 5: true, 6: true}); err != nil {
		t.Errorf("draining brokers that host nothing: %v", err)
	}
}

func TestPlanBalanceRackKeptOnSkew(t *testing.T) {
	// Brokers 1 (rack a), 2 (rack b) hold everything; broker 3 (rack b)
	// joins. Moving a replica off 1 to 3 would leave a partition on rack
	// b alone: only 2's replicas move.
	parts := evenTopic("t", 4, 2, 2)
	plan := PlanBalance(parts, BalanceView{Brokers: racked(map[int32]string{1: "a", 2: "b", 3: "b"}), MaxMoves: 10, Skew: 1})
	for _, m := range plan.Moves {
		if m.Kind == MoveSkew && m.From != 2 {
			t.Errorf("move off rack a's only broker: %v", m)
		}
	}
	if c := replicaCounts(applyPlan(parts, plan)); c[3] == 0 {
		t.Errorf("broker 3 got nothing: %v (%v)", c, renderMoves(plan))
	}
}

func TestPlanBalanceSkipsFencedAndOffline(t *testing.T) {
	parts := evenTopic("t", 4, 2, 2)
	parts[0].Replicas = []int32{1, 9} // 9 is fenced: the partition stays
	plan := PlanBalance(parts, BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 10, Skew: 1})
	for _, m := range plan.Moves {
		if m.Partition == 0 {
			t.Errorf("partition with a replica on a fenced broker moved: %v", m)
		}
	}
	// Preferred moves only to a replica that is in the ISR and not offline.
	p := []PartitionState{
		{Topic: "u", Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
		{Topic: "u", Partition: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
	}
	plan = PlanBalance(p, BalanceView{Brokers: brokersOf(1, 2), MaxMoves: 10, Skew: 1,
		Offline: map[int32][]OfflineReplica{2: {{Partition: 0}}}})
	if len(plan.Moves) != 0 {
		t.Errorf("preferred moved to an offline or out-of-sync replica: %v", renderMoves(plan))
	}
	plan = PlanBalance(p, BalanceView{Brokers: brokersOf(1, 2), MaxMoves: 10, Skew: 1})
	if got, want := renderMoves(plan), []string{"preferred u-0 1->2 [2 1]"}; !slices.Equal(got, want) {
		t.Errorf("moves %v, want %v", got, want)
	}

	// A partition whose preferred replica is offline on its broker does not
	// count as that broker's leadership: broker 1 keeps preferring v-1
	// (membershiptest's TestReplicaFailingToOpen: the healthy partition's
	// leadership was moved off the node with the offline one).
	v := []PartitionState{
		{Topic: "v", Partition: 0, Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}},
		{Topic: "v", Partition: 1, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
	}
	plan = PlanBalance(v, BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 10, Skew: 1,
		Offline: map[int32][]OfflineReplica{1: {{Partition: 0}}}})
	if len(plan.Moves) != 0 {
		t.Errorf("a broker's offline preferred replica moved its other leadership away: %v", renderMoves(plan))
	}
}

// TestPlanBalanceEvensTopicsOut: the cheapest moves are those of an empty
// topic, but the balancer does not move only them: each topic ends up on
// the new broker.
func TestPlanBalanceEvensTopicsOut(t *testing.T) {
	parts := append(evenTopic("big", 6, 2, 2), evenTopic("tiny", 6, 2, 2)...)
	bytes := func(st PartitionState) int64 {
		if st.Topic == "big" {
			return 1000
		}
		return 0
	}
	v := BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 100, Skew: 1, Bytes: bytes}
	for range 10 {
		plan := PlanBalance(parts, v)
		if len(plan.Moves) == 0 {
			break
		}
		parts = applyPlan(parts, plan)
	}
	perTopic := map[string]int{}
	for _, st := range parts {
		if slices.Contains(st.Replicas, 3) {
			perTopic[st.Topic]++
		}
	}
	if perTopic["big"] < 3 || perTopic["tiny"] < 3 {
		t.Errorf("broker 3 hosts %v partitions by topic, want at least 3 of each (of 6, RF 2, three brokers)", perTopic)
	}
}

// TestPlanBalancePreferredPerTopic: broker 3 joins two topics already on
// every broker (RF 3) and preferred by 1 and 2 only; reorders give it
// preferred partitions of both topics, not of one.
func TestPlanBalancePreferredPerTopic(t *testing.T) {
	var parts []PartitionState
	for _, topic := range []string{"a", "b"} {
		for p := range int32(4) {
			r := []int32{1 + p%2, 2 - p%2, 3}
			parts = append(parts, PartitionState{Topic: topic, Partition: p, Leader: r[0], Replicas: r, ISR: slices.Clone(r)})
		}
	}
	plan := PlanBalance(parts, BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 10, Skew: 1})
	perTopic := map[string]int{}
	for _, st := range applyPlan(parts, plan) {
		if st.Replicas[0] == 3 {
			perTopic[st.Topic]++
		}
	}
	if perTopic["a"] != 1 || perTopic["b"] != 1 {
		t.Errorf("broker 3 preferred by %v partitions by topic, want 1 of each: %v", perTopic, renderMoves(plan))
	}
}

// BenchmarkPlanBalancePreferred plans a cluster of 10,000 partitions in
// 100 topics of 100 whose preferred replicas are even within each topic
// and uneven over the cluster (every topic's first partition prefers
// broker 1, as 100 topics created with the same start would), so that the
// plan is preferred-replica moves: what the controller of such a cluster
// plans every balancer interval until they are made.
func BenchmarkPlanBalancePreferred(b *testing.B) {
	var parts []PartitionState
	for t := range 100 {
		parts = append(parts, evenTopic(fmt.Sprintf("t%d", t), 100, 3, 3)...)
	}
	v := BalanceView{Brokers: brokersOf(1, 2, 3), MaxMoves: 10, Skew: 1}
	if plan := PlanBalance(parts, v); len(plan.Moves) == 0 {
		b.Fatal("no moves planned: the benchmark plans nothing")
	}
	for b.Loop() {
		PlanBalance(parts, v)
	}
}
