package controlplane

import (
	"cmp"
	"fmt"
	"slices"
)

// Replica balancing: the controller keeps replicas and preferred leaders
// spread evenly over the brokers that may host them (live, not in a
// controlled shutdown, not draining), rack-aware, and empties the brokers
// being decommissioned (draining). The plan is a pure function of the
// partition records and the brokers (STYLE.md 6); the Controller writes it
// (balancer_run.go) only through the KIP-455 path of reassign.go, a bounded
// number of reassignments at a time, and `shale cluster rebalance
// --dry-run` prints the same plan before anything runs.
//
// One pass, in order:
//
//  1. Leaderships of draining brokers go first: to the first other replica
//     that is live, in the ISR, not draining and not being removed. These
//     are leader elections, not reassignments, and cost nothing.
//  2. Replicas of draining brokers move to hosts, each replaced in its
//     position by the host with the fewest replicas whose rack keeps the
//     partition's racks as spread as before; the cheapest moves first.
//  3. When no drain is left to start and the most and least loaded hosts
//     differ by more than Skew replicas, a replica moves from the most to
//     the least loaded, the partition that copies least first, until they
//     differ by Skew at most or the budget is spent.
//  4. Preferred replicas (the first of each list, where leadership goes
//     back) are spread the same way by reordering replica lists: a
//     reorder adds no replica and completes at once.
//
// A reassignment in progress counts as done for the counts (its target
// replicas) and against the budget (MaxMoves): at most MaxMoves
// reassignments copy at once, whoever started them. A partition in
// progress is not planned again until it completes.

// MoveKind says why a balance move is planned.
type MoveKind string

// Move kinds.
const (
	// MoveLeader moves leadership off a draining broker (no reassignment).
	MoveLeader MoveKind = "leader"
	// MoveDrain replaces a draining broker's replica.
	MoveDrain MoveKind = "drain"
	// MoveSkew moves a replica from the most to the least loaded host.
	MoveSkew MoveKind = "skew"
	// MovePreferred reorders a replica list so that the preferred replica
	// spreads evenly (a reassignment that adds and removes nothing).
	MovePreferred MoveKind = "preferred"
)

// BalanceView is what PlanBalance decides from.
type BalanceView struct {
	// Brokers are the live brokers (Store.Brokers), with their racks.
	// Those in a controlled shutdown host nothing new and lead nothing.
	Brokers []Broker
	// Draining are the brokers being decommissioned (live or not): their
	// leaderships and then their replicas move away.
	Draining map[int32]bool
	// Offline lists, by broker, the replicas a broker reports offline:
	// such a replica does not lead.
	Offline map[int32][]OfflineReplica
	// Bytes estimates what a new replica of st copies: on a tiered topic
	// the leader's local tail (a new replica rebuilds the rest from the
	// remote tail), else its whole log. Negative: unknown. Nil: unknown.
	Bytes func(st PartitionState) int64
	// MaxMoves bounds the reassignments in progress at once (those
	// already running count). At least 1 is used.
	MaxMoves int
	// Skew is the difference in replica count between the most and the
	// least loaded host that is tolerated (at least 1 is used).
	Skew int
}

// BalanceMove is one planned change.
type BalanceMove struct {
	Kind      MoveKind
	Topic     string
	Partition int32
	// From and To: the broker whose replica (or leadership, for
	// MoveLeader) moves, and where. For MovePreferred, From is the
	// preferred replica before and To after.
	From, To int32
	// Replicas is the target replica list of a reassignment (nil for
	// MoveLeader).
	Replicas []int32
	// Bytes is the estimate of what the move copies: 0 for leader moves
	// and reorders, negative when unknown.
	Bytes int64
	// State is the record the move was decided from: write it by
	// compare-and-set on its revision.
	State PartitionState
}

func (m BalanceMove) String() string {
	switch m.Kind {
	case MoveLeader:
		return fmt.Sprintf("%s-%d: leader %d -> %d", m.Topic, m.Partition, m.From, m.To)
	case MovePreferred:
		return fmt.Sprintf("%s-%d: preferred %d -> %d, replicas %v -> %v", m.Topic, m.Partition, m.From, m.To, m.State.Replicas, m.Replicas)
	}
	return fmt.Sprintf("%s-%d: %s replica %d -> %d, replicas %v -> %v, bytes %d", m.Topic, m.Partition, m.Kind, m.From, m.To,
		m.State.Replicas, m.Replicas, m.Bytes)
}

// BrokerLoad is one broker's share, counting reassignments in progress as
// done (their target replicas).
type BrokerLoad struct {
	Broker int32
	Rack   string
	// Replicas, Leaders and Preferred count the partitions with a replica
	// on the broker, led by it, and whose preferred replica it is.
	Replicas, Leaders, Preferred int
	// Host: the broker may be given replicas (live, not draining, not
	// shutting down). Draining: it is being decommissioned.
	Host, Draining bool
}

// BalancePlan is the outcome of PlanBalance.
type BalancePlan struct {
	// Load has one entry per live or draining broker, by id, before the
	// plan's moves.
	Load []BrokerLoad
	// Moves are in the order to run them; at most one reassignment per
	// partition, and at most MaxMoves minus InFlight reassignments that
	// copy (MoveDrain, MoveSkew).
	Moves []BalanceMove
	// InFlight counts the reassignments in progress.
	InFlight int
	// Blocked says, per partition, why a draining broker's replica cannot
	// move (too few hosts, or another replica is offline).
	Blocked []string
	// Pending counts the drain and skew moves left for later passes by the
	// budget.
	Pending int
}

// Balanced reports whether the plan has nothing to do and nothing in
// flight.
func (p BalancePlan) Balanced() bool {
	return len(p.Moves) == 0 && p.InFlight == 0 && p.Pending == 0
}

// Skew is the difference between the most and the least loaded host's
// replica counts (0 with fewer than two hosts).
func (p BalancePlan) Skew() int {
	lo, hi, n := 0, 0, 0
	for _, l := range p.Load {
		if !l.Host {
			continue
		}
		if n == 0 || l.Replicas < lo {
			lo = l.Replicas
		}
		if n == 0 || l.Replicas > hi {
			hi = l.Replicas
		}
		n++
	}
	return hi - lo
}

// balanceState is PlanBalance's working copy.
type balanceState struct {
	v        BalanceView
	live     map[int32]Broker
	hosts    []int32 // sorted
	isHost   map[int32]bool
	rack     map[int32]string
	replicas map[int32]int
	pref     map[int32]int
	// perTopic counts replicas by topic and broker, so that a skew move
	// also evens each topic out where the cost allows.
	perTopic map[string]map[int32]int
	target   map[int]([]int32) // index into parts -> target replicas after the plan
	planned  map[int]bool      // partitions with a reassignment in the plan
}

// PlanBalance decides one balancing pass over parts (see above). It reads
// no clock and does no I/O; the caller owns the result, and parts is not
// modified.
func PlanBalance(parts []PartitionState, v BalanceView) BalancePlan {
	v.MaxMoves, v.Skew = max(v.MaxMoves, 1), max(v.Skew, 1)
	s := &balanceState{v: v, live: map[int32]Broker{}, isHost: map[int32]bool{}, rack: map[int32]string{},
		replicas: map[int32]int{}, pref: map[int32]int{}, perTopic: map[string]map[int32]int{}, target: map[int][]int32{}, planned: map[int]bool{}}
	for _, b := range v.Brokers {
		s.live[b.NodeID] = b
		s.rack[b.NodeID] = b.Rack
		if !b.ControlledShutdown && !v.Draining[b.NodeID] {
			s.hosts = append(s.hosts, b.NodeID)
			s.isHost[b.NodeID] = true
		}
	}
	slices.Sort(s.hosts)
	var plan BalancePlan
	leaders := map[int32]int{}
	for i, st := range parts {
		t := st.TargetReplicas()
		s.target[i] = t
		if s.perTopic[st.Topic] == nil {
			s.perTopic[st.Topic] = map[int32]int{}
		}
		for _, r := range t {
			s.replicas[r]++
			s.perTopic[st.Topic][r]++
		}
		if len(t) > 0 && !slices.Contains(v.Offline[t[0]], OfflineReplica{TopicID: st.TopicID, Partition: st.Partition}) {
			// A preferred replica that is offline on its broker cannot
			// lead: it is no leadership to even out (nor can the
			// partition be reordered while a replica is offline), so it
			// must not push the broker's other partitions away.
			s.pref[t[0]]++
		}
		if st.Leader >= 0 {
			leaders[st.Leader]++
		}
		if st.Reassigning() {
			plan.InFlight++
		}
	}
	ids := slices.Collect(func(yield func(int32) bool) {
		for id := range s.live {
			if !yield(id) {
				return
			}
		}
		for id := range v.Draining {
			if _, ok := s.live[id]; !ok && !yield(id) {
				return
			}
		}
	})
	slices.Sort(ids)
	for _, id := range ids {
		plan.Load = append(plan.Load, BrokerLoad{Broker: id, Rack: s.rack[id], Replicas: s.replicas[id], Leaders: leaders[id],
			Preferred: s.pref[id], Host: s.isHost[id], Draining: v.Draining[id]})
	}
	budget := v.MaxMoves - plan.InFlight

	// 1. Leaderships off draining brokers.
	for _, st := range parts {
		if st.Leader < 0 || !v.Draining[st.Leader] {
			continue
		}
		live := LiveFor(st, func(b int32) bool { return s.isHost[b] }, v.Offline)
		for _, r := range st.TargetReplicas() {
			if live(r) && slices.Contains(st.ISR, r) {
				plan.Moves = append(plan.Moves, BalanceMove{Kind: MoveLeader, Topic: st.Topic, Partition: st.Partition,
					From: st.Leader, To: r, State: st})
				break
			}
		}
	}

	// 2. Replicas off draining brokers, cheapest first.
	var drains []int
	for i, st := range parts {
		if st.Reassigning() || !slices.ContainsFunc(s.target[i], func(r int32) bool { return v.Draining[r] }) {
			continue
		}
		if why := s.drainBlocked(st, s.target[i]); why != "" {
			plan.Blocked = append(plan.Blocked, why)
			continue
		}
		drains = append(drains, i)
	}
	s.byCost(parts, drains)
	for _, i := range drains {
		if budget <= 0 {
			plan.Pending++
			continue
		}
		st, next := parts[i], slices.Clone(s.target[i])
		for j, r := range next {
			if !v.Draining[r] {
				continue
			}
			to := s.bestHost(st.Topic, next, r)
			next[j] = to
			s.replicas[r]--
			s.replicas[to]++
			s.perTopic[st.Topic][r]--
			s.perTopic[st.Topic][to]++
			if j == 0 {
				s.pref[r]--
				s.pref[to]++
			}
			plan.Moves = append(plan.Moves, BalanceMove{Kind: MoveDrain, Topic: st.Topic, Partition: st.Partition,
				From: r, To: to, Replicas: next, Bytes: s.bytes(st), State: st})
		}
		// A partition with two draining replicas is one reassignment: the
		// last move carries the full target.
		for k := len(plan.Moves) - 1; k >= 0 && plan.Moves[k].Kind == MoveDrain && plan.Moves[k].State.Partition == st.Partition &&
			plan.Moves[k].Topic == st.Topic; k-- {
			plan.Moves[k].Replicas = next
		}
		s.target[i], s.planned[i] = next, true
		budget--
	}

	// 3. Replica skew over the hosts, once no drain waits.
	if len(drains) == 0 || plan.Pending == 0 {
		for range len(parts) {
			if budget <= 0 {
				if s.skewed() {
					plan.Pending++
				}
				break
			}
			m, ok := s.skewMove(parts)
			if !ok {
				break
			}
			plan.Moves = append(plan.Moves, m)
			budget--
		}
	}

	// 4. Preferred replicas over the hosts.
	for range len(parts) {
		m, ok := s.preferredMove(parts)
		if !ok {
			break
		}
		plan.Moves = append(plan.Moves, m)
	}
	return plan
}

// CheckDrain reports whether draining the brokers in draining can finish:
// every partition with a replica on one of them needs as many hosts (live
// brokers in brokers, not draining, not shutting down) as it has replicas.
// It returns an ErrDrainImpossible naming the first partition that could
// not move, and nil when all can.
func CheckDrain(parts []PartitionState, brokers []Broker, draining map[int32]bool) error {
	hosts := 0
	for _, b := range brokers {
		if !b.ControlledShutdown && !draining[b.NodeID] {
			hosts++
		}
	}
	for _, st := range parts {
		t := st.TargetReplicas()
		if !slices.ContainsFunc(t, func(r int32) bool { return draining[r] }) {
			continue
		}
		if len(t) > hosts {
			return fmt.Errorf("%w: %s-%d has %d replicas %v, and only %d brokers would be left to host them (draining %v)",
				ErrDrainImpossible, st.Topic, st.Partition, len(t), t, hosts, sortedIDs(draining))
		}
	}
	return nil
}

func sortedIDs(m map[int32]bool) []int32 {
	var out []int32
	for id, ok := range m {
		if ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// drainBlocked says why partition st, with target replicas t, cannot drain
// now, or "".
func (s *balanceState) drainBlocked(st PartitionState, t []int32) string {
	free := 0
	for _, h := range s.hosts {
		if !slices.Contains(t, h) {
			free++
		}
	}
	need := 0
	for _, r := range t {
		switch {
		case s.v.Draining[r]:
			need++
		case !s.isHost[r]:
			return fmt.Sprintf("%s-%d: replica on broker %d is not live; the drain of %v waits for it", st.Topic, st.Partition, r, drainingIn(t, s.v.Draining))
		}
	}
	if need > free {
		return fmt.Sprintf("%s-%d: replicas %v, %d of them draining, and only %d other brokers can host a replica",
			st.Topic, st.Partition, t, need, free)
	}
	return ""
}

func drainingIn(t []int32, draining map[int32]bool) []int32 {
	return slices.DeleteFunc(slices.Clone(t), func(r int32) bool { return !draining[r] })
}

// bestHost picks the host to take leaving's place in replicas of a
// partition of topic: not already a replica, keeping the most distinct
// racks, then the fewest replicas, then the fewest of topic, then the
// lowest id. REQUIRES: one exists (drainBlocked said so).
func (s *balanceState) bestHost(topic string, replicas []int32, leaving int32) int32 {
	best, bestRacks := int32(-1), -1
	for _, h := range s.hosts {
		if slices.Contains(replicas, h) {
			continue
		}
		racks := s.racksWith(replicas, leaving, h)
		better := best < 0 || racks > bestRacks
		if !better && racks == bestRacks {
			better = cmp.Or(cmp.Compare(s.replicas[h], s.replicas[best]), cmp.Compare(s.perTopic[topic][h], s.perTopic[topic][best])) < 0
		}
		if better {
			best, bestRacks = h, racks
		}
	}
	return best
}

// racksWith counts the distinct racks of replicas with from replaced by to.
// A broker without a rack counts as a rack of its own.
func (s *balanceState) racksWith(replicas []int32, from, to int32) int {
	seen := map[string]bool{}
	for _, r := range replicas {
		if r == from {
			r = to
		}
		k, ok := s.rack[r], true
		if k == "" {
			k, ok = fmt.Sprintf("\x00%d", r), true
		}
		seen[k] = ok
	}
	return len(seen)
}

// bytes is v.Bytes(st), -1 when unknown.
func (s *balanceState) bytes(st PartitionState) int64 {
	if s.v.Bytes == nil {
		return -1
	}
	return max(s.v.Bytes(st), -1)
}

// byCost orders idx (indexes into parts) by the bytes a move copies, known
// before unknown, then by topic and partition.
func (s *balanceState) byCost(parts []PartitionState, idx []int) {
	key := func(b int64) int64 {
		if b < 0 {
			return 1 << 62
		}
		return b
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(key(s.bytes(parts[a])), key(s.bytes(parts[b]))),
			cmp.Compare(parts[a].Topic, parts[b].Topic), cmp.Compare(parts[a].Partition, parts[b].Partition))
	})
}

// extremes returns the hosts with the most and the fewest of count, the
// lowest id first among equals.
func (s *balanceState) extremes(count map[int32]int) (hi, lo int32) {
	hi, lo = -1, -1
	for _, h := range s.hosts {
		if hi < 0 || count[h] > count[hi] {
			hi = h
		}
		if lo < 0 || count[h] < count[lo] {
			lo = h
		}
	}
	return hi, lo
}

func (s *balanceState) skewed() bool {
	hi, lo := s.extremes(s.replicas)
	return hi >= 0 && s.replicas[hi]-s.replicas[lo] > s.v.Skew
}

// movable reports whether partition i may be reassigned by a skew or
// preferred move: not in progress, not planned yet, every replica on a
// host (a replica on a fenced broker would keep the move from
// completing).
func (s *balanceState) movable(parts []PartitionState, i int) bool {
	if parts[i].Reassigning() || s.planned[i] || len(s.target[i]) == 0 {
		return false
	}
	return !slices.ContainsFunc(s.target[i], func(r int32) bool { return !s.isHost[r] })
}

// skewMove plans one replica move from an over-loaded host to an
// under-loaded one, when the most and least loaded differ by more than
// Skew: the pair with the largest gap that has a movable partition keeping
// its racks, and of its partitions one whose topic the move evens out
// (from holds at least two more of the topic than to, else one more),
// the one that copies least among those.
func (s *balanceState) skewMove(parts []PartitionState) (BalanceMove, bool) {
	if !s.skewed() {
		return BalanceMove{}, false
	}
	over := slices.SortedFunc(slices.Values(s.hosts), func(a, b int32) int {
		return cmp.Or(cmp.Compare(s.replicas[b], s.replicas[a]), cmp.Compare(a, b))
	})
	under := slices.Clone(over)
	slices.Reverse(under)
	slices.SortStableFunc(under, func(a, b int32) int { return cmp.Or(cmp.Compare(s.replicas[a], s.replicas[b]), cmp.Compare(a, b)) })
	for _, from := range over {
		for _, to := range under {
			if s.replicas[from]-s.replicas[to] < 2 {
				break
			}
			var cands []int
			for i := range parts {
				t := s.target[i]
				if !s.movable(parts, i) || !slices.Contains(t, from) || slices.Contains(t, to) {
					continue
				}
				if s.racksWith(t, from, to) < s.racksWith(t, from, from) {
					continue
				}
				cands = append(cands, i)
			}
			if len(cands) == 0 {
				continue
			}
			s.byCost(parts, cands)
			tier := func(i int) int {
				gap := s.perTopic[parts[i].Topic][from] - s.perTopic[parts[i].Topic][to]
				return max(0, 2-gap) // 0: evens the topic out, 1: keeps it, 2: skews it
			}
			slices.SortStableFunc(cands, func(a, b int) int { return cmp.Compare(tier(a), tier(b)) })
			i := cands[0]
			st, next := parts[i], slices.Clone(s.target[i])
			j := slices.Index(next, from)
			next[j] = to
			s.replicas[from]--
			s.replicas[to]++
			s.perTopic[st.Topic][from]--
			s.perTopic[st.Topic][to]++
			if j == 0 {
				s.pref[from]--
				s.pref[to]++
			}
			s.target[i], s.planned[i] = next, true
			return BalanceMove{Kind: MoveSkew, Topic: st.Topic, Partition: st.Partition, From: from, To: to,
				Replicas: next, Bytes: s.bytes(st), State: st}, true
		}
	}
	return BalanceMove{}, false
}

// preferredMove plans one reorder that moves the preferred replica of a
// partition from the host preferred most to one preferred at least two
// fewer times that is a replica in the ISR (so that leadership can follow
// at once), not offline; of such partitions, one of the topic where the
// move evens the preferred replicas out most.
func (s *balanceState) preferredMove(parts []PartitionState) (BalanceMove, bool) {
	over := slices.SortedFunc(slices.Values(s.hosts), func(a, b int32) int {
		return cmp.Or(cmp.Compare(s.pref[b], s.pref[a]), cmp.Compare(a, b))
	})
	// How often each broker is a topic's preferred replica, counted once
	// per call (the targets change only by the move returned): counting
	// it per candidate partition made a plan quadratic in the partitions,
	// 4 s of CPU per 10 s on the controller of 10,000 partitions in 100
	// topics.
	byTopic := map[string]map[int32]int{}
	for i, st := range parts {
		if len(s.target[i]) == 0 {
			continue
		}
		m := byTopic[st.Topic]
		if m == nil {
			m = map[int32]int{}
			byTopic[st.Topic] = m
		}
		m[s.target[i][0]]++
	}
	prefOf := func(topic string, b int32) int { return byTopic[topic][b] }
	for _, from := range over {
		// Of the partitions from prefers, the one whose topic it prefers
		// most more often than the replica taking over.
		bestI, bestTo, bestGap := -1, int32(-1), 0
		for i, st := range parts {
			t := s.target[i]
			if !s.movable(parts, i) || t[0] != from {
				continue
			}
			live := LiveFor(st, func(b int32) bool { return s.isHost[b] }, s.v.Offline)
			to := int32(-1)
			for _, r := range t[1:] {
				if s.pref[from]-s.pref[r] >= 2 && live(r) && slices.Contains(st.ISR, r) && (to < 0 || s.pref[r] < s.pref[to]) {
					to = r
				}
			}
			if to < 0 {
				continue
			}
			if gap := prefOf(st.Topic, from) - prefOf(st.Topic, to); bestI < 0 || gap > bestGap {
				bestI, bestTo, bestGap = i, to, gap
			}
		}
		if bestI < 0 {
			continue
		}
		st, next := parts[bestI], slices.Clone(s.target[bestI])
		j := slices.Index(next, bestTo)
		next[0], next[j] = next[j], next[0]
		s.pref[from]--
		s.pref[bestTo]++
		s.target[bestI], s.planned[bestI] = next, true
		return BalanceMove{Kind: MovePreferred, Topic: st.Topic, Partition: st.Partition, From: from, To: bestTo,
			Replicas: next, State: st}, true
	}
	return BalanceMove{}, false
}
