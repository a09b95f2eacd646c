package controlplane

import (
	"cmp"
	"slices"
)

// AssignReplicas spreads partitions 0..partitions-1 over brokers, rf replicas
// each, the first replica being the preferred leader. It is Kafka's
// assignment: partition p's first replica is broker (start+p) mod n in a
// fixed order, and the followers step through the others with a shift that
// grows every n partitions, so leaders and followers both spread evenly.
// When any broker has a rack, brokers are ordered alternating between racks
// and each partition's replicas take distinct racks while a rack is left
// unused (brokers without a rack form the rack ""). start is usually random;
// a fixed start makes the result deterministic.
//
// It returns nil when rf < 1, rf > len(brokers) or partitions < 0; callers
// validate first. It is a pure function; the caller owns the result.
func AssignReplicas(brokers []Broker, partitions int32, rf int16, start int) [][]int32 {
	n := len(brokers)
	if rf < 1 || int(rf) > n || partitions < 0 {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(brokers), func(a, b Broker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	start = ((start % n) + n) % n
	if hasRacks(sorted) {
		return assignRackAware(sorted, partitions, int(rf), start)
	}
	out := make([][]int32, partitions)
	shift := start
	for p := range int(partitions) {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		r := make([]int32, 0, rf)
		r = append(r, sorted[first].NodeID)
		for j := range int(rf) - 1 {
			r = append(r, sorted[replicaIndex(first, shift, j, n)].NodeID)
		}
		out[p] = r
	}
	return out
}

// replicaIndex is Kafka's follower placement: skip the first replica, then
// walk the other n-1 brokers from an offset of shift.
func replicaIndex(first, shift, j, n int) int {
	return (first + 1 + (shift+j)%(n-1)) % n
}

func hasRacks(brokers []Broker) bool {
	return slices.ContainsFunc(brokers, func(b Broker) bool { return b.Rack != "" })
}

func assignRackAware(sorted []Broker, partitions int32, rf, start int) [][]int32 {
	arranged := rackAlternated(sorted)
	n := len(arranged)
	rackOf := make(map[int32]string, n)
	for _, b := range arranged {
		rackOf[b.NodeID] = b.Rack
	}
	numRacks := len(slices.Compact(slices.Sorted(func(yield func(string) bool) {
		for _, b := range arranged {
			if !yield(b.Rack) {
				return
			}
		}
	})))
	out := make([][]int32, partitions)
	shift := start
	for p := range int(partitions) {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		leader := arranged[first].NodeID
		r := make([]int32, 0, rf)
		r = append(r, leader)
		racks := map[string]bool{rackOf[leader]: true}
		used := map[int32]bool{leader: true}
		k := 0
		for len(r) < rf {
			b := arranged[replicaIndex(first, shift*numRacks, k, n)].NodeID
			k++
			if (!racks[rackOf[b]] || len(racks) == numRacks) && !used[b] {
				r = append(r, b)
				racks[rackOf[b]] = true
				used[b] = true
			}
		}
		out[p] = r
	}
	return out
}

// rackAlternated orders brokers rack by rack in turn (racks sorted, brokers
// within a rack by id): a1, b1, c1, a2, b2, ...
func rackAlternated(sorted []Broker) []Broker {
	byRack := map[string][]Broker{}
	var racks []string
	for _, b := range sorted {
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	slices.Sort(racks)
	out := make([]Broker, 0, len(sorted))
	for i := 0; len(out) < len(sorted); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}
