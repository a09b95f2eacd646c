package controlplane

import (
	"fmt"
	"slices"
	"testing"
)

func brokersN(n int, racks ...string) []Broker {
	bs := make([]Broker, n)
	for i := range bs {
		bs[i] = Broker{NodeID: int32(i + 1), Host: "127.0.0.1", Port: 9092}
		if len(racks) > 0 {
			bs[i].Rack = racks[i%len(racks)]
		}
	}
	return bs
}

// checkWellFormed asserts every partition has rf distinct replicas drawn from brokers.
func checkWellFormed(t *testing.T, brokers []Broker, a [][]int32, partitions int32, rf int16) {
	t.Helper()
	if len(a) != int(partitions) {
		t.Fatalf("got %d partitions, want %d", len(a), partitions)
	}
	ids := map[int32]bool{}
	for _, b := range brokers {
		ids[b.NodeID] = true
	}
	for p, r := range a {
		if len(r) != int(rf) {
			t.Fatalf("partition %d: %d replicas, want %d", p, len(r), rf)
		}
		seen := map[int32]bool{}
		for _, id := range r {
			if !ids[id] {
				t.Fatalf("partition %d: unknown broker %d", p, id)
			}
			if seen[id] {
				t.Fatalf("partition %d: broker %d twice in %v", p, id, r)
			}
			seen[id] = true
		}
	}
}

func TestAssignReplicasBalance(t *testing.T) {
	for _, tc := range []struct {
		brokers    int
		partitions int32
		rf         int16
	}{{1, 5, 1}, {3, 6, 3}, {3, 12, 2}, {5, 20, 3}, {4, 8, 4}, {6, 60, 3}} {
		for start := range tc.brokers {
			name := fmt.Sprintf("b%d-p%d-rf%d-s%d", tc.brokers, tc.partitions, tc.rf, start)
			t.Run(name, func(t *testing.T) {
				bs := brokersN(tc.brokers)
				a := AssignReplicas(bs, tc.partitions, tc.rf, start)
				checkWellFormed(t, bs, a, tc.partitions, tc.rf)
				leaders := map[int32]int{}
				replicas := map[int32]int{}
				for _, r := range a {
					leaders[r[0]]++
					for _, id := range r {
						replicas[id]++
					}
				}
				// partitions is a multiple of the broker count in every case,
				// so leadership and replicas are exactly even.
				wantLeaders := int(tc.partitions) / tc.brokers
				wantReplicas := int(tc.partitions) * int(tc.rf) / tc.brokers
				for _, b := range bs {
					if leaders[b.NodeID] != wantLeaders {
						t.Errorf("broker %d leads %d partitions, want %d (%v)", b.NodeID, leaders[b.NodeID], wantLeaders, a)
					}
					if replicas[b.NodeID] != wantReplicas {
						t.Errorf("broker %d holds %d replicas, want %d (%v)", b.NodeID, replicas[b.NodeID], wantReplicas, a)
					}
				}
			})
		}
	}
}

func TestAssignReplicasKafkaPattern(t *testing.T) {
	// Kafka's rack-unaware assignment for 5 brokers, 10 partitions, rf 3,
	// start 0: followers shift by one more every 5 partitions.
	got := AssignReplicas(brokersN(5), 10, 3, 0)
	want := [][]int32{
		{1, 2, 3}, {2, 3, 4}, {3, 4, 5}, {4, 5, 1}, {5, 1, 2},
		{1, 3, 4}, {2, 4, 5}, {3, 5, 1}, {4, 1, 2}, {5, 2, 3},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestAssignReplicasStartRotatesLeaders(t *testing.T) {
	bs := brokersN(3)
	if a := AssignReplicas(bs, 1, 1, 2); a[0][0] != 3 {
		t.Fatalf("start 2: leader %d, want 3", a[0][0])
	}
	if a := AssignReplicas(bs, 1, 1, -1); a[0][0] != 3 {
		t.Fatalf("start -1: leader %d, want 3", a[0][0])
	}
	// Input order does not matter: brokers are ordered by id.
	rev := slices.Clone(bs)
	slices.Reverse(rev)
	if !slices.EqualFunc(AssignReplicas(bs, 7, 2, 1), AssignReplicas(rev, 7, 2, 1), slices.Equal) {
		t.Fatal("assignment depends on broker input order")
	}
}

func TestAssignReplicasRackSpread(t *testing.T) {
	for _, tc := range []struct {
		brokers int
		racks   []string
		rf      int16
	}{
		{6, []string{"a", "b", "c"}, 3},
		{6, []string{"a", "b"}, 2},
		{6, []string{"a", "b"}, 3}, // more replicas than racks: racks still both used
		{4, []string{"a", "a", "a", "b"}, 2},
		{5, []string{"x", "y", "z"}, 3},
	} {
		t.Run(fmt.Sprintf("%d-%v-rf%d", tc.brokers, tc.racks, tc.rf), func(t *testing.T) {
			bs := brokersN(tc.brokers, tc.racks...)
			rackOf := map[int32]string{}
			racks := map[string]bool{}
			for _, b := range bs {
				rackOf[b.NodeID] = b.Rack
				racks[b.Rack] = true
			}
			for start := range tc.brokers {
				a := AssignReplicas(bs, 30, tc.rf, start)
				checkWellFormed(t, bs, a, 30, tc.rf)
				for p, r := range a {
					distinct := map[string]bool{}
					for _, id := range r {
						distinct[rackOf[id]] = true
					}
					if want := min(int(tc.rf), len(racks)); len(distinct) != want {
						t.Fatalf("start %d partition %d: replicas %v span %d racks, want %d", start, p, r, len(distinct), want)
					}
				}
			}
		})
	}
}

func TestAssignReplicasRackAwareLeadersSpread(t *testing.T) {
	bs := brokersN(6, "a", "b", "c")
	a := AssignReplicas(bs, 6, 3, 0)
	leaders := map[int32]bool{}
	for _, r := range a {
		leaders[r[0]] = true
	}
	if len(leaders) != 6 {
		t.Fatalf("6 partitions on 6 brokers led by %d brokers: %v", len(leaders), a)
	}
}

func TestAssignReplicasLimits(t *testing.T) {
	bs := brokersN(3)
	for _, tc := range []struct {
		name       string
		brokers    []Broker
		partitions int32
		rf         int16
	}{
		{"rf above brokers", bs, 3, 4},
		{"rf zero", bs, 3, 0},
		{"rf negative", bs, 3, -1},
		{"no brokers", nil, 3, 1},
		{"negative partitions", bs, -1, 1},
	} {
		if a := AssignReplicas(tc.brokers, tc.partitions, tc.rf, 0); a != nil {
			t.Errorf("%s: got %v, want nil", tc.name, a)
		}
	}
	if a := AssignReplicas(bs, 0, 3, 0); a == nil || len(a) != 0 {
		t.Errorf("zero partitions: got %v, want empty", a)
	}
	checkWellFormed(t, bs, AssignReplicas(bs, 4, 3, 1), 4, 3)
}
