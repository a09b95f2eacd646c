package controlplane

import (
	"cmp"
	"slices"
)

// Preferred-leader balancing, as Kafka's controller does it with
// auto.leader.rebalance.enable (KafkaController.checkAndTriggerAutoLeaderRebalance,
// QuorumController's balancePartitionLeaders): every
// leader.imbalance.check.interval.seconds the controller computes, for each
// broker, the share of the partitions whose preferred (first assigned)
// replica it is that another broker leads; where that share is above
// leader.imbalance.per.broker.percentage, leadership of those partitions
// goes back to the preferred replica when it can lead (ElectPreferred: live
// and in the ISR). The plan is a pure function of the partition records and
// the brokers' liveness; the Controller writes it by compare-and-set.

// LeaderBalanceView is what PlanPreferredLeaders decides from.
type LeaderBalanceView struct {
	// Eligible reports whether broker b may be given leadership at all: it
	// has a live session, its registration is unfenced, and it is not in a
	// controlled shutdown. Nil: none is.
	Eligible func(b int32) bool
	// Offline lists, by broker, the replicas a broker reports offline
	// (Store.OfflineReplicas): such a replica does not lead (LiveFor).
	Offline map[int32][]OfflineReplica
	// ImbalancePercentage is leader.imbalance.per.broker.percentage: a
	// broker's partitions are moved back only when more than this share
	// of them is led elsewhere.
	ImbalancePercentage int
}

// LeaderImbalance is one broker's imbalance in a plan.
type LeaderImbalance struct {
	// Broker is the preferred replica's id.
	Broker int32
	// Preferred counts the partitions whose preferred replica is Broker;
	// NotLed those of them another broker leads (or none does).
	Preferred, NotLed int
}

// Ratio is NotLed/Preferred (0 when Broker prefers nothing).
func (li LeaderImbalance) Ratio() float64 {
	if li.Preferred == 0 {
		return 0
	}
	return float64(li.NotLed) / float64(li.Preferred)
}

// LeaderBalancePlan is the outcome of one balancing pass.
type LeaderBalancePlan struct {
	// Imbalance has one entry per broker that is the preferred replica of
	// some partition, by broker id.
	Imbalance []LeaderImbalance
	// Moves are the partitions' next states, each moving leadership to
	// the preferred replica (ElectPreferred), at most one per partition.
	Moves []Decision
}

// PlanPreferredLeaders decides which partitions of parts move leadership
// back to their preferred replica. A partition is moved only when its
// preferred broker's imbalance ratio is above v.ImbalancePercentage, the
// broker is v.Eligible and not reporting the replica offline, the replica
// is in the ISR, the partition has a leader, and it is not being
// reassigned (its leadership follows the reassignment, as in Kafka).
// The caller owns the returned slices; parts is not modified.
func PlanPreferredLeaders(parts []PartitionState, v LeaderBalanceView) LeaderBalancePlan {
	eligible := v.Eligible
	if eligible == nil {
		eligible = func(int32) bool { return false }
	}
	byBroker := map[int32]*LeaderImbalance{}
	for _, st := range parts {
		if len(st.Replicas) == 0 {
			continue
		}
		p := st.Replicas[0]
		li := byBroker[p]
		if li == nil {
			li = &LeaderImbalance{Broker: p}
			byBroker[p] = li
		}
		li.Preferred++
		if st.Leader != p {
			li.NotLed++
		}
	}
	var plan LeaderBalancePlan
	for _, li := range byBroker {
		plan.Imbalance = append(plan.Imbalance, *li)
	}
	slices.SortFunc(plan.Imbalance, func(a, b LeaderImbalance) int { return cmp.Compare(a.Broker, b.Broker) })
	over := map[int32]bool{}
	for _, li := range plan.Imbalance {
		// NotLed*100 > Preferred*pct is Kafka's ratio > pct/100, in integers.
		over[li.Broker] = li.NotLed*100 > li.Preferred*v.ImbalancePercentage
	}
	type key struct {
		topic     string
		partition int32
	}
	moved := map[key]bool{}
	for _, st := range parts {
		if len(st.Replicas) == 0 || !over[st.Replicas[0]] || st.Reassigning() || st.Leader < 0 {
			continue
		}
		k := key{st.Topic, st.Partition}
		if moved[k] {
			continue
		}
		live := LiveFor(st, eligible, v.Offline)
		d := ElectPreferred(st, live)
		if !d.LeaderChanged {
			continue
		}
		moved[k] = true
		plan.Moves = append(plan.Moves, d)
	}
	return plan
}
