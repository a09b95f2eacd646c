package group

// The server-side assignors of KIP-848 consumer groups: "uniform" (the
// default, Kafka's UniformAssignor) and "range" (Kafka's RangeAssignor).
// Both are pure functions of the members' subscriptions and racks, the
// subscribed topics' partitions and racks, and the previous target
// assignment; both are rack-aware where racks are known (a member's rack
// among a partition's replica racks wins when the balance allows it).

import (
	"cmp"
	"slices"
)

const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

func knownAssignor(name string) bool { return name == assignorUniform || name == assignorRange }

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id     string
	rack   string          // "" when unknown
	topics map[string]bool // subscribed topic names that exist
	prev   assignment      // its previous target assignment
}

// assignTopic is one subscribed topic.
type assignTopic struct {
	name       string
	id         topicID
	partitions int32
	racks      [][]string // per partition; nil when unknown
}

func (t assignTopic) rackMatch(p int32, rack string) bool {
	if rack == "" || int(p) >= len(t.racks) {
		return false
	}
	return slices.Contains(t.racks[p], rack)
}

// assignPartitions runs the named assignor. members are sorted by id;
// topics by name. It returns a target assignment for every member.
func assignPartitions(name string, members []assignMember, topics []assignTopic) map[string]assignment {
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		out[m.id] = assignment{}
	}
	if len(members) == 0 {
		return out
	}
	if name == assignorRange {
		assignRange(members, topics, out)
	} else {
		assignUniform(members, topics, out)
	}
	return out
}

// assignRange gives each topic's partitions to its subscribers in
// contiguous ranges, in member id order, the first ones one more when the
// count does not divide. With racks known, a member first takes the
// partitions of its quota whose replicas share its rack.
func assignRange(members []assignMember, topics []assignTopic, out map[string]assignment) {
	for _, t := range topics {
		var subs []assignMember
		for _, m := range members {
			if m.topics[t.name] {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 || t.partitions == 0 {
			continue
		}
		n := int(t.partitions)
		quota := make([]int, len(subs))
		for i := range subs {
			quota[i] = n / len(subs)
			if i < n%len(subs) {
				quota[i]++
			}
		}
		taken := make([]bool, n)
		if t.racks != nil {
			for i, m := range subs {
				for p := 0; p < n && quota[i] > 0; p++ {
					if !taken[p] && t.rackMatch(int32(p), m.rack) {
						taken[p] = true
						quota[i]--
						out[m.id].add(t.id, int32(p))
					}
				}
			}
		}
		p := 0
		for i, m := range subs {
			for ; quota[i] > 0 && p < n; p++ {
				if !taken[p] {
					taken[p] = true
					quota[i]--
					out[m.id].add(t.id, int32(p))
				}
			}
		}
	}
}

// assignUniform spreads every subscribed partition over the members
// subscribed to its topic so that counts differ by at most one where the
// subscriptions allow, moving as few partitions as it can from the
// previous target assignment (sticky).
func assignUniform(members []assignMember, topics []assignTopic, out map[string]assignment) {
	type tp struct {
		t int // index in topics
		p int32
	}
	var all []tp
	for i, t := range topics {
		for p := range t.partitions {
			all = append(all, tp{i, p})
		}
	}
	eligible := func(m assignMember, x tp) bool { return m.topics[topics[x.t].name] }
	var subscribers []int // members subscribed to something
	for i, m := range members {
		if len(m.topics) > 0 {
			subscribers = append(subscribers, i)
		}
	}
	if len(subscribers) == 0 || len(all) == 0 {
		return
	}
	// Quotas: the members with the most partitions kept get the extra ones.
	prevCount := make([]int, len(members))
	owner := map[tp]int{}
	for _, x := range all {
		t := topics[x.t]
		for _, i := range subscribers {
			if members[i].prev.has(t.id, x.p) && eligible(members[i], x) {
				if _, dup := owner[x]; !dup {
					owner[x] = i
					prevCount[i]++
				}
			}
		}
	}
	order := slices.Clone(subscribers)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(prevCount[b], prevCount[a]) })
	quota := make([]int, len(members))
	for k, i := range order {
		quota[i] = len(all) / len(subscribers)
		if k < len(all)%len(subscribers) {
			quota[i]++
		}
	}
	count := make([]int, len(members))
	// Keep what each member had, up to its quota, in partition order.
	kept := map[tp]int{}
	for _, x := range all {
		if i, ok := owner[x]; ok && count[i] < quota[i] {
			kept[x] = i
			count[i]++
		}
	}
	// Give the rest to the least loaded eligible member, a rack match first.
	for _, x := range all {
		if _, ok := kept[x]; ok {
			continue
		}
		best, bestRack := -1, false
		for _, i := range subscribers {
			m := members[i]
			if !eligible(m, x) {
				continue
			}
			rack := topics[x.t].rackMatch(x.p, m.rack)
			under := count[i] < quota[i]
			switch {
			case best < 0:
			case under && count[best] >= quota[best]:
			case under == (count[best] < quota[best]) && rack && !bestRack:
			case under == (count[best] < quota[best]) && rack == bestRack && count[i] < count[best]:
			default:
				continue
			}
			best, bestRack = i, rack
		}
		if best >= 0 {
			kept[x] = best
			count[best]++
		}
	}
	// Even out what heterogeneous subscriptions left uneven: move a
	// partition from a member with two more than an eligible other.
	for range len(all) {
		moved := false
		for x, from := range kept {
			for _, to := range subscribers {
				if to != from && eligible(members[to], x) && count[from] > count[to]+1 {
					kept[x] = to
					count[from]--
					count[to]++
					moved = true
					break
				}
			}
		}
		if !moved {
			break
		}
	}
	for x, i := range kept {
		out[members[i].id].add(topics[x.t].id, x.p)
	}
}
