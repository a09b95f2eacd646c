package controlplane

import (
	"cmp"
	"slices"
)

// Leader eligibility after unclean restarts, following KIP-966 (eligible
// leader replicas, and its unclean recovery that elects the longest log):
//
//   - a replica that leaves the ISR while the ISR is below
//     min.insync.replicas joins the ELR: the high watermark cannot move
//     while the ISR is that small, so it holds every committed record. The
//     ELR is cleared once the ISR is back at min.insync.replicas, and a
//     member that rejoins the ISR leaves it;
//   - the leader candidates are the ISR (whose last member stays when every
//     member is dead), then the ELR, each in assignment order;
//   - a candidate is trusted unless its node started uncleanly (no
//     clean-shutdown record: killed, crashed, or an empty disk) and was a
//     candidate of this partition when it opened its replica: such a node
//     may have lost an unflushed tail, or everything. It reports the log end
//     it opened with (Store.ReportReplicaLogs); until it has, it is pending;
//   - the first live trusted candidate leads. One from the ELR becomes the
//     ISR, and the ISR's members join the ELR;
//   - a member that restarted uncleanly leaves the ISR while a trusted
//     member remains; below min.insync.replicas it joins the ELR in the
//     same change, like a dead member, and stays a candidate;
//   - with no live trusted candidate, the controller waits until every
//     candidate is live and has reported, then elects the one with the
//     longest log (largest last epoch, then log end; ties to the first
//     candidate), never one that reported a new disk (ReplicaLog.NewDisk:
//     it holds nothing). It lacks an acknowledged record only if every
//     candidate lost that record. It becomes the ISR and the other
//     candidates the ELR;
//   - otherwise, with unclean.leader.election.enable, the first live replica
//     leads (one that reported a new disk only when no other is live), and
//     else the partition stays offline;
//   - a node drops a partition from its report once it is back in the ISR
//     under a leader, in a record written after the report, having been out
//     of it at the report or since (ReplicaLog.Rejoined): it caught up (or
//     was itself elected as the longest log), so it is trusted again. The
//     controller applies the same rule to the report it sees, so that it does
//     not take a member the leader just re-admitted out of the ISR again
//     before the node has dropped the entry.

// Trust is what the controller knows of a live broker's log of one
// partition.
type Trust int

// Trust values.
const (
	// Trusted: the broker holds what it held as a candidate (it did not
	// restart uncleanly since, or earned its place again by catching up).
	Trusted Trust = iota
	// Pending: it started uncleanly and has not reported its log ends yet.
	Pending
	// Reported: it started uncleanly as a candidate; the ReplicaLog is the
	// log end it opened with.
	Reported
)

// View is what the controller knows when it decides one partition.
type View struct {
	// Live reports a registered broker.
	Live func(int32) bool
	// Trust says how far a live broker's log of the partition can be
	// trusted (see Eligibility). Nil: every live broker is trusted.
	Trust func(int32) (Trust, ReplicaLog)
	// MinISR is the topic's min.insync.replicas; below 1 counts as 1.
	MinISR int
	// Unclean is the topic's unclean.leader.election.enable.
	Unclean bool
	// Incarnation is the incarnation of a live broker's registration
	// (Store.Incarnation), "" when unknown. Nil: registrations are not
	// told apart (ReconcilePartition does not fence re-registered leaders).
	Incarnation func(int32) string
}

func (v View) trust(b int32) (Trust, ReplicaLog) {
	if v.Trust == nil {
		return Trusted, ReplicaLog{}
	}
	return v.Trust(b)
}

func (v View) trusted(b int32) bool {
	if !v.Live(b) {
		return false
	}
	t, _ := v.trust(b)
	return t == Trusted
}

// Eligibility is the Trust of broker b for partition st, from b's
// registration and its report (logs, reported: Store.ReplicaLogs): trusted
// after a clean start or when its report does not name the partition.
func Eligibility(st PartitionState, b Broker, logs []ReplicaLog, reported bool) (Trust, ReplicaLog) {
	if !b.UncleanStart {
		return Trusted, ReplicaLog{}
	}
	if !reported {
		return Pending, ReplicaLog{}
	}
	for _, l := range logs {
		if l.TopicID == st.TopicID && l.Partition == st.Partition {
			if l.Rejoined(st, b.NodeID) {
				// The leader put it back by the catch-up rule; the node drops
				// the entry soon, but until then the controller must not take
				// it out of the ISR again on a stale report.
				return Trusted, ReplicaLog{}
			}
			return Reported, l
		}
	}
	return Trusted, ReplicaLog{}
}

// Elect brings a partition in line with the live brokers and their trust,
// as a KRaft controller does when a broker is fenced or registers again:
// dead brokers, and untrusted ones while a trusted member remains, leave
// the ISR (never emptying it: its last member stays) and join the ELR when
// the ISR falls below min.insync.replicas; a live, trusted
// leader in the ISR keeps leading; otherwise a new leader is chosen by the
// rules above. Every change of leader bumps the leader epoch.
func Elect(st PartitionState, v View) Decision {
	minISR := max(v.MinISR, 1)
	next := st.clone()
	var isr, removed []int32
	for _, b := range st.ISR {
		if v.Live(b) {
			isr = append(isr, b)
		} else {
			removed = append(removed, b)
		}
	}
	if slices.ContainsFunc(isr, v.trusted) {
		// A member that restarted uncleanly (a new disk, a torn log) may no
		// longer hold what the ISR acknowledged: while a trusted member
		// remains it leaves the ISR and comes back only by the leader's
		// catch-up rule, as Kafka removes a broker that registers with a
		// new incarnation from every ISR. Otherwise it stayed in the ISR
		// when it came back before its session expired, and ElectLeaders
		// PREFERRED could make its empty log the leader's. Below
		// min.insync.replicas it joins the ELR like any member that
		// leaves (KIP-966: in the same change), where it stays a candidate
		// the controller trusts only through its report (it leads only as
		// the longest log of every candidate). Left out, the remaining
		// member would be the only candidate: issue 22's loss, where that
		// member was a killed leader whose registration had not expired,
		// and it came back with an empty disk and was elected as the
		// longest log of one.
		for _, b := range isr {
			if !v.trusted(b) {
				removed = append(removed, b)
			}
		}
		isr = slices.DeleteFunc(isr, func(b int32) bool { return !v.trusted(b) })
	}
	if len(isr) == 0 && len(st.ISR) > 0 {
		// Keep the last ISR member: it holds every acknowledged write.
		last := st.ISR[0]
		if slices.Contains(st.ISR, st.Leader) {
			last = st.Leader
		}
		isr = []int32{last}
		removed = slices.DeleteFunc(removed, func(b int32) bool { return b == last })
	}
	elr := slices.DeleteFunc(slices.Clone(st.ELR), func(b int32) bool { return slices.Contains(isr, b) })
	if len(isr) < minISR {
		elr = append(elr, removed...)
	} else {
		elr = nil
	}
	next.ISR, next.ELR = isr, inOrder(st.Replicas, elr)
	if !(st.Leader >= 0 && slices.Contains(isr, st.Leader) && v.trusted(st.Leader)) {
		next.Leader = -1
		cands := append(inOrder(st.Replicas, isr), next.ELR...)
		for _, c := range cands {
			if v.trusted(c) {
				next.Leader = c
				break
			}
		}
		if l := next.Leader; l >= 0 && !slices.Contains(isr, l) {
			next.ISR = []int32{l}
			next.ELR = slices.DeleteFunc(slices.Clone(cands), func(b int32) bool { return b == l })
		}
		if next.Leader < 0 {
			if best, ok := longestLog(cands, v); ok {
				next.Leader, next.ISR, next.ELR = best, []int32{best}, nil
				if minISR > 1 {
					// The other candidates stay candidates: should the new
					// leader fail before they rejoin, it is not the only one
					// (as a candidate elected from the ELR above).
					next.ELR = inOrder(st.Replicas, slices.DeleteFunc(slices.Clone(cands), func(b int32) bool { return b == best }))
				}
			}
		}
		if next.Leader < 0 && v.Unclean {
			// The first live replica, one that did not lose its replica's
			// directory before one that did.
			for _, lost := range []bool{false, true} {
				for _, r := range st.Replicas {
					if next.Leader < 0 && v.Live(r) && lostDisk(r, v) == lost {
						next.Leader, next.ISR, next.ELR = r, []int32{r}, nil
					}
				}
			}
		}
	}
	if len(next.ELR) == 0 {
		next.ELR = nil
	}
	return finish(st, next)
}

// longestLog is the unclean recovery: when every candidate is live and has
// reported, the one with the largest (last epoch, log end), the first on
// ties, among those that did not report a new disk (ReplicaLog.NewDisk):
// a candidate that lost its replica's directory holds none of what it
// held as a candidate, and electing it would make the others truncate
// every record they hold to its empty log. With no other candidate the
// partition stays offline (unless unclean.leader.election.enable), as
// Kafka leaves a partition whose last ISR member registers after an
// unclean shutdown (KIP-966).
func longestLog(cands []int32, v View) (int32, bool) {
	if len(cands) == 0 {
		return -1, false
	}
	best, bestLog := int32(-1), ReplicaLog{}
	for _, c := range cands {
		if !v.Live(c) {
			return -1, false
		}
		t, l := v.trust(c)
		if t == Pending {
			return -1, false
		}
		if t == Reported && l.NewDisk {
			continue
		}
		if best < 0 || cmp.Or(cmp.Compare(l.LastEpoch, bestLog.LastEpoch), cmp.Compare(l.LogEnd, bestLog.LogEnd)) > 0 {
			best, bestLog = c, l
		}
	}
	return best, best >= 0
}

// lostDisk reports whether live broker b reported a new disk for the
// partition (ReplicaLog.NewDisk) and is not trusted with it since.
func lostDisk(b int32, v View) bool {
	t, l := v.trust(b)
	return t == Reported && l.NewDisk
}

// ChangeISR is the leader's ISR change (committed by compare-and-set before
// it counts), with KIP-966's ELR rule: members removed while the new ISR is
// below minISR join the ELR, members added leave it, and the ELR is cleared
// once the ISR reaches minISR.
func ChangeISR(st PartitionState, isr []int32, minISR int) PartitionState {
	next := st.clone()
	next.ISR = slices.Clone(isr)
	elr := slices.DeleteFunc(slices.Clone(st.ELR), func(b int32) bool { return slices.Contains(isr, b) })
	if len(isr) < max(minISR, 1) {
		for _, b := range st.ISR {
			if !slices.Contains(isr, b) && !slices.Contains(elr, b) {
				elr = append(elr, b)
			}
		}
	} else {
		elr = nil
	}
	next.ELR = inOrder(st.Replicas, elr)
	return next
}

// inOrder returns the members of set in the order of order (the replicas),
// nil when none.
func inOrder(order, set []int32) []int32 {
	var out []int32
	for _, r := range order {
		if slices.Contains(set, r) {
			out = append(out, r)
		}
	}
	return out
}

// ElectionViews snapshots what s knows of the brokers now (registrations,
// their unclean-start reports, the replicas each reports offline, their
// incarnations) and returns the View that the controller decides a
// partition with under that snapshot, for the topic's min.insync.replicas
// and unclean.leader.election.enable. The controller's passes and
// ElectLeaders UNCLEAN decide with the same view, so that a request elects
// by the same trust as the controller: never a replica back with a new disk
// while another live replica holds the data.
func (s *Store) ElectionViews() func(st PartitionState, minISR int, unclean bool) View {
	return s.electionViews(nil)
}

// electionViews is ElectionViews with the brokers graced (the
// controller's session grace, grace.go) taken for live, trusted brokers
// of their last process even while they have no key.
func (s *Store) electionViews(graced []int32) func(st PartitionState, minISR int, unclean bool) View {
	type registration struct {
		b        Broker
		logs     []ReplicaLog
		reported bool
	}
	live := map[int32]registration{}
	offline := map[int32][]OfflineReplica{}
	for _, id := range graced {
		live[id] = registration{b: Broker{NodeID: id}}
	}
	for _, b := range s.Brokers() {
		r := registration{b: b}
		if b.UncleanStart {
			r.logs, r.reported = s.ReplicaLogs(b.NodeID)
		}
		live[b.NodeID] = r
		offline[b.NodeID] = s.OfflineReplicas(b.NodeID)
	}
	isLive := func(b int32) bool { _, ok := live[b]; return ok }
	incarnation := func(b int32) string {
		inc, _ := s.Incarnation(b)
		return inc
	}
	return func(st PartitionState, minISR int, unclean bool) View {
		return View{Live: LiveFor(st, isLive, offline), MinISR: minISR, Unclean: unclean, Incarnation: incarnation,
			Trust: func(b int32) (Trust, ReplicaLog) {
				r := live[b]
				return Eligibility(st, r.b, r.logs, r.reported)
			}}
	}
}
