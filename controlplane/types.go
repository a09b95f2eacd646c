package controlplane

import (
	"maps"
	"slices"
)

// Topic is a topic's metadata. Values returned by a Store are copies the
// caller owns.
type Topic struct {
	Name string
	ID   TopicID
	// Partitions is the partition count; partitions are 0..Partitions-1.
	Partitions        int32
	ReplicationFactor int16
	// Configs holds only the explicitly set topic configs (Kafka names, e.g.
	// "retention.ms"); defaults are resolved elsewhere.
	Configs map[string]string
	// Internal marks Kafka's internal topics (__consumer_offsets,
	// __transaction_state).
	Internal bool
}

func (t Topic) clone() Topic {
	t.Configs = maps.Clone(t.Configs)
	return t
}

// PartitionState is the replicated state of one partition.
type PartitionState struct {
	TopicID   TopicID
	Topic     string
	Partition int32
	// Replicas lists the assigned brokers; the first is the preferred leader.
	// During a reassignment (KIP-455) it is the target replicas followed by
	// the RemovingReplicas: old ∪ new.
	Replicas []int32
	// AddingReplicas are the replicas a reassignment in progress adds: they
	// fetch as followers and join the ISR by the leader's catch-up rule.
	AddingReplicas []int32
	// RemovingReplicas are the replicas a reassignment in progress removes:
	// they keep their logs until it completes.
	RemovingReplicas []int32
	// Leader is the leading broker, or -1 when there is none.
	Leader      int32
	LeaderEpoch int32
	// ISR is the in-sync replica set, a subset of Replicas.
	ISR []int32
	// ELR are the eligible leader replicas (KIP-966): replicas that left the
	// ISR while it was below min.insync.replicas, so that the high watermark
	// could not pass what they hold. They may lead when no ISR member can.
	// Disjoint from the ISR; cleared once the ISR is back at
	// min.insync.replicas.
	ELR []int32
	// LeaderIncarnation is the incarnation of the leader's registration
	// (Store.Incarnation) when the controller last saw it lead: a leader
	// that registers again (a restart) has a new one, and the controller
	// then bumps the leader epoch (ReconcilePartition). Empty until the
	// controller has seen the leader; cleared when the leader changes.
	LeaderIncarnation string
	// PartitionEpoch is bumped by every UpdatePartition.
	PartitionEpoch int32
	// ControllerEpoch is the epoch (lease revision) of the last controller
	// that wrote this state; a controller with an older one is deposed and
	// may not write it (Kafka's controller epoch). Other writers keep it.
	ControllerEpoch uint64
	// Revision is the KV revision this state was read at or written as; pass
	// it back to UpdatePartition for compare-and-set.
	Revision uint64
}

func (p PartitionState) clone() PartitionState {
	// One allocation for the five lists (a store of 10,000 partitions
	// clones them all for each Partitions call); each list's capacity ends
	// at its length, so an append by the caller copies instead of writing
	// into the next list. A nil list stays nil.
	buf := make([]int32, 0, len(p.Replicas)+len(p.ISR)+len(p.ELR)+len(p.AddingReplicas)+len(p.RemovingReplicas))
	take := func(s []int32) []int32 {
		if s == nil {
			return nil
		}
		i := len(buf)
		buf = append(buf, s...)
		return buf[i:len(buf):len(buf)]
	}
	p.Replicas = take(p.Replicas)
	p.ISR = take(p.ISR)
	p.ELR = take(p.ELR)
	p.AddingReplicas = take(p.AddingReplicas)
	p.RemovingReplicas = take(p.RemovingReplicas)
	return p
}

// Broker is a registered broker's identity and Kafka listener address.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	// Rack is the broker's rack (Kafka's broker.rack); empty when unset.
	Rack string
	// UncleanStart: the node's previous run did not shut down cleanly (no
	// clean-shutdown record in its data dir: killed, crashed, or a new
	// disk), so its logs may have lost an unflushed tail. Until it reports
	// its log ends (Store.ReportReplicaLogs) it is trusted with no
	// partition it was a leader candidate of (see Eligibility).
	UncleanStart bool
	// ControlledShutdown: the node is stopping cleanly and is handing its
	// leaderships away (Store.BeginControlledShutdown); the controller
	// gives it no leadership (PlanPreferredLeaders), as Kafka's controller
	// does for a broker in controlled shutdown.
	ControlledShutdown bool
	// Listeners are the broker's advertised listeners in Kafka's
	// advertised.listeners form, NAME://host:port,NAME://host:port; Host
	// and Port are those of its inter-broker listener. Empty for a broker
	// that registered none.
	Listeners string
}

// ReplicaLog is a node's report of one local replica's log end, made when a
// node that started uncleanly opened a replica it was a leader candidate of
// (in the ISR or ELR).
type ReplicaLog struct {
	TopicID   TopicID
	Partition int32
	// LeaderEpoch and PartitionEpoch are those of the partition record the
	// node saw when it opened the replica: the report is about the state the
	// node was a candidate in.
	LeaderEpoch    int32
	PartitionEpoch int32
	// LastEpoch is the leader epoch of the log's last batch (-1 for an empty
	// log) and LogEnd its log end offset.
	LastEpoch int32
	LogEnd    int64
	// InISR: the node was in the ISR of that record (else the ELR). Such a
	// member must be seen out of the ISR before a later ISR counts as its
	// rejoining: the node then moves PartitionEpoch on to the record that
	// removed it and clears InISR (see Rejoined).
	InISR bool
	// NewDisk: the node found no directory for the replica when it opened
	// it (a new or wiped disk, or one that lost the directory): whatever it
	// held as a candidate is gone. Such a candidate is never elected by the
	// unclean recovery (Elect's longest log); it leads again only once the
	// leader's catch-up rule re-admits it (Rejoined).
	NewDisk bool
}

// OfflineReplica names a local replica that a node cannot serve: it failed
// to open, or its log went offline after an I/O error (Kafka's offline log
// dir). The node reports them in its registration
// (Store.ReportOfflineReplicas); the controller counts the node as dead for
// those partitions only: it leaves their ISR and never leads them.
type OfflineReplica struct {
	TopicID   TopicID
	Partition int32
}

// Rejoined reports whether broker b, which made report l, is back in the
// ISR of st under a leader after the report: st is a later record and b was
// out of the ISR at the report's. Only the leader's catch-up rule (or an
// election that weighed the report) puts it back, so the report no longer
// applies: b holds what the ISR holds.
func (l ReplicaLog) Rejoined(st PartitionState, b int32) bool {
	return !l.InISR && st.Leader >= 0 && st.PartitionEpoch > l.PartitionEpoch && slices.Contains(st.ISR, b)
}

// EventKind says what changed.
type EventKind int

// Event kinds.
const (
	// TopicCreated: a topic appeared (Event.Topic).
	TopicCreated EventKind = iota + 1
	// TopicChanged: a topic's partition count or configs changed (Event.Topic).
	TopicChanged
	// TopicDeleted: a topic was deleted (Event.Topic is its last known value).
	TopicDeleted
	// PartitionChanged: a partition state was created or changed
	// (Event.Partition).
	PartitionChanged
	// PartitionDeleted: a partition state was removed with its topic
	// (Event.Partition is its last known value).
	PartitionDeleted
	// BrokerUp: a broker registered (Event.Broker).
	BrokerUp
	// BrokerDown: a broker's registration expired or was removed
	// (Event.Broker is its last known value).
	BrokerDown
)

var eventKindNames = [...]string{
	TopicCreated: "TopicCreated", TopicChanged: "TopicChanged", TopicDeleted: "TopicDeleted",
	PartitionChanged: "PartitionChanged", PartitionDeleted: "PartitionDeleted",
	BrokerUp: "BrokerUp", BrokerDown: "BrokerDown",
}

func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "EventKind(?)"
}

// Event is one change to the cached metadata. Only the field named by Kind
// is set. Subscribers own the event's slices and maps.
type Event struct {
	Kind      EventKind
	Topic     Topic
	Partition PartitionState
	Broker    Broker
}
