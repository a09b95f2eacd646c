package controlplane

import (
	"fmt"
	"slices"
	"testing"
)

func psTP(topic string, p, leader int32, replicas, isr []int32) PartitionState {
	return PartitionState{Topic: topic, Partition: p, Leader: leader, LeaderEpoch: 5, Replicas: replicas, ISR: isr}
}

// moves renders a plan's moves as "topic-p:from->to epoch" for comparison.
func moves(parts []PartitionState, plan LeaderBalancePlan) []string {
	var out []string
	for _, d := range plan.Moves {
		from := int32(-2)
		for _, st := range parts {
			if st.Topic == d.State.Topic && st.Partition == d.State.Partition {
				from = st.Leader
			}
		}
		out = append(out, fmt.Sprintf("%s-%d:%d->%d@%d", d.State.Topic, d.State.Partition, from, d.State.Leader, d.State.LeaderEpoch))
	}
	return out
}

func TestPlanPreferredLeaders(t *testing.T) {
	all := []int32{1, 2, 3}
	// Six partitions, each broker preferred by two; after broker 1
	// restarted, 2 and 3 lead everything.
	skewed := []PartitionState{
		psTP("t", 0, 2, []int32{1, 2, 3}, all),
		psTP("t", 1, 2, []int32{2, 3, 1}, all),
		psTP("t", 2, 3, []int32{3, 1, 2}, all),
		psTP("t", 3, 3, []int32{1, 3, 2}, all),
		psTP("t", 4, 2, []int32{2, 1, 3}, all),
		psTP("t", 5, 3, []int32{3, 2, 1}, all),
	}
	withISR := func(parts []PartitionState, p int32, isr ...int32) []PartitionState {
		out := slices.Clone(parts)
		out[p].ISR = isr
		return out
	}
	reassigning := slices.Clone(skewed)
	reassigning[3].AddingReplicas = []int32{4}
	leaderless := slices.Clone(skewed)
	leaderless[0].Leader = -1
	half := []PartitionState{ // broker 1 prefers 4 partitions, leads 3
		psTP("u", 0, 1, []int32{1, 2}, []int32{1, 2}),
		psTP("u", 1, 1, []int32{1, 2}, []int32{1, 2}),
		psTP("u", 2, 1, []int32{1, 2}, []int32{1, 2}),
		psTP("u", 3, 2, []int32{1, 2}, []int32{1, 2}),
	}
	cases := []struct {
		name     string
		parts    []PartitionState
		eligible []int32
		offline  map[int32][]OfflineReplica
		pct      int
		want     []string
	}{
		{"balanced: nothing", []PartitionState{psTP("t", 0, 1, []int32{1, 2}, all), psTP("t", 1, 2, []int32{2, 1}, all)}, all, nil, 10, nil},
		{"restarted broker gets its two back", skewed, all, nil, 10, []string{"t-0:2->1@6", "t-3:3->1@6"}},
		{"preferred broker not eligible (dead, fenced or shutting down)", skewed, []int32{2, 3}, nil, 10, nil},
		{"preferred replica out of the ISR stays a follower", withISR(skewed, 0, 2, 3), all, nil, 10, []string{"t-3:3->1@6"}},
		{"preferred replica reports its log offline", skewed, all, map[int32][]OfflineReplica{1: {{Partition: 3}}}, 10, []string{"t-0:2->1@6"}},
		{"reassigning partition is left alone", reassigning, all, nil, 10, []string{"t-0:2->1@6"}},
		{"leaderless partition is left to the election", leaderless, all, nil, 10, []string{"t-3:3->1@6"}},
		{"ratio 1/4 is not above 25%", half, all, nil, 25, nil},
		{"ratio 1/4 is above 24%", half, all, nil, 24, []string{"u-3:2->1@6"}},
		{"percentage 100 never moves", skewed, all, nil, 100, nil},
		{"percentage 0 moves any imbalance", half, all, nil, 0, []string{"u-3:2->1@6"}},
		{"a partition listed twice moves once", append(slices.Clone(half), half[3]), all, nil, 0, []string{"u-3:2->1@6"}},
		{"no replicas: skipped", []PartitionState{psTP("t", 0, -1, nil, nil)}, all, nil, 0, nil},
	}
	for _, c := range cases {
		plan := PlanPreferredLeaders(c.parts, LeaderBalanceView{Eligible: liveSet(c.eligible...), Offline: c.offline, ImbalancePercentage: c.pct})
		if got := moves(c.parts, plan); !slices.Equal(got, c.want) {
			t.Errorf("%s: moves %v, want %v", c.name, got, c.want)
		}
		for _, d := range plan.Moves {
			if !slices.Contains(d.State.ISR, d.State.Leader) || !slices.Contains(c.eligible, d.State.Leader) {
				t.Errorf("%s: moved %s-%d to %d, not an eligible ISR member", c.name, d.State.Topic, d.State.Partition, d.State.Leader)
			}
		}
	}
}

func TestPlanPreferredLeadersImbalance(t *testing.T) {
	all := []int32{1, 2, 3}
	parts := []PartitionState{
		psTP("t", 0, 2, []int32{1, 2, 3}, all),
		psTP("t", 1, 1, []int32{1, 2, 3}, all),
		psTP("t", 2, 2, []int32{2, 1, 3}, all),
		psTP("t", 3, -1, []int32{3, 1, 2}, all),
	}
	plan := PlanPreferredLeaders(parts, LeaderBalanceView{ImbalancePercentage: 10}) // nobody eligible
	want := []LeaderImbalance{{Broker: 1, Preferred: 2, NotLed: 1}, {Broker: 2, Preferred: 1}, {Broker: 3, Preferred: 1, NotLed: 1}}
	if !slices.Equal(plan.Imbalance, want) || len(plan.Moves) != 0 {
		t.Fatalf("imbalance %+v moves %d; want %+v and none", plan.Imbalance, len(plan.Moves), want)
	}
	if r := want[0].Ratio(); r != 0.5 {
		t.Fatalf("ratio %v, want 0.5", r)
	}
	if r := (LeaderImbalance{Broker: 9}).Ratio(); r != 0 {
		t.Fatalf("ratio of nothing %v, want 0", r)
	}
}
