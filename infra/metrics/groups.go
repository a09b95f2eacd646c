package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupFigures are the group and share coordinators' figures over the
// groups this node coordinates, and the share-partitions it leads (Kafka's
// GroupCoordinatorMetrics and SharePartition metrics).
type GroupFigures struct {
	// Classic counts the classic groups by state (Empty,
	// PreparingRebalance, CompletingRebalance, Stable).
	Classic map[string]int
	// Consumer counts the KIP-848 consumer groups by state (Empty,
	// Assigning, Reconciling, Stable).
	Consumer map[string]int
	// Share counts the KIP-932 share groups by state (Empty, Stable).
	Share map[string]int
	// Offsets is the number of committed offsets.
	Offsets int
	// Totals since the node started.
	ClassicRebalances, ConsumerRebalances, ShareRebalances, OffsetCommits int64
	OffsetsExpired                                                        int64
	// SharePartitions are the share-partitions this node leads.
	SharePartitions []SharePartitionFigures
}

// SharePartitionFigures is one share-partition's in-flight records and lag.
type SharePartitionFigures struct {
	Group, Topic       string
	Partition          int32
	InFlight, Acquired int
	Lag                int64
}

const gcm = "kafka_server_group_coordinator_metrics_"

var (
	descGroupCount = desc(gcm+"group_count",
		"Groups this node coordinates, by protocol (classic, consumer, share): Kafka's group-count.", "protocol")
	descConsumerGroupCount = desc(gcm+"consumer_group_count",
		"KIP-848 consumer groups this node coordinates, by state (Empty, Assigning, Reconciling, Stable): Kafka's consumer-group-count.", "state")
	descShareGroupCount = desc(gcm+"share_group_count",
		"KIP-932 share groups this node coordinates, by state (Empty, Stable): Kafka's group-count with protocol=share and a state.", "state")
	descClassicRebalances = desc(gcm+"group_completed_rebalance_total",
		"Classic group rebalances completed (the leader's assignment written) on this node since it started: Kafka's group-completed-rebalance-count.")
	descConsumerRebalances = desc(gcm+"consumer_group_rebalance_total",
		"New target assignments of KIP-848 consumer groups computed on this node since it started: Kafka's consumer-group-rebalance-count.")
	descShareRebalances = desc(gcm+"share_group_rebalance_total",
		"New group epochs (assignments) of share groups with members on this node since it started: Kafka's rebalance-count with protocol=share.")
	descOffsetCommits = desc(gcm+"offset_commit_total",
		"Offsets committed (OffsetCommit) to groups on this node since it started: Kafka's offset-commit-count.")
	descOffsetsExpired = desc(gcm+"offset_expiration_total",
		"Committed offsets expired by offsets.retention on this node since it started: Kafka's offset-expiration-count.")

	gmm                    = "kafka_coordinator_group_groupmetadatamanager_"
	descNumGroups          = desc(gmm+"num_groups", "Classic groups this node coordinates: Kafka's NumGroups.")
	descNumGroupsEmpty     = desc(gmm+"num_groups_empty", "Classic groups in state Empty: Kafka's NumGroupsEmpty.")
	descNumGroupsPreparing = desc(gmm+"num_groups_preparing_rebalance",
		"Classic groups in state PreparingRebalance: Kafka's NumGroupsPreparingRebalance.")
	descNumGroupsCompleting = desc(gmm+"num_groups_completing_rebalance",
		"Classic groups in state CompletingRebalance: Kafka's NumGroupsCompletingRebalance.")
	descNumGroupsStable = desc(gmm+"num_groups_stable", "Classic groups in state Stable: Kafka's NumGroupsStable.")
	descNumOffsets      = desc(gmm+"num_offsets", "Committed offsets of the groups this node coordinates: Kafka's NumOffsets.")

	descShareInFlight = desc("kafka_server_share_partition_metrics_in_flight_message_count",
		"Records a share-partition this node leads tracks above its start offset (acquired, available again, or acknowledged and not yet passed): Kafka's InFlightMessageCount.",
		"group", "topic", "partition")
	descShareAcquired = desc("shale_share_partition_acquired_records",
		"Records of a share-partition held by a member now (Acquired, under an acquisition lock).", "group", "topic", "partition")
	descShareLag = desc("shale_share_partition_lag",
		"Records of a share-partition at or above its start offset, below the high watermark, not acknowledged or archived (the lag DescribeShareGroupOffsets answers).",
		"group", "topic", "partition")
)

var groupDescs = []*prometheus.Desc{
	descGroupCount, descConsumerGroupCount, descShareGroupCount,
	descClassicRebalances, descConsumerRebalances, descShareRebalances, descOffsetCommits, descOffsetsExpired,
	descNumGroups, descNumGroupsEmpty, descNumGroupsPreparing, descNumGroupsCompleting, descNumGroupsStable, descNumOffsets,
	descShareInFlight, descShareAcquired, descShareLag,
}

// collectGroups sends g's series.
func collectGroups(ch chan<- prometheus.Metric, g *GroupFigures) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	sum := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	gauge(descGroupCount, float64(sum(g.Classic)), "classic")
	gauge(descGroupCount, float64(sum(g.Consumer)), "consumer")
	gauge(descGroupCount, float64(sum(g.Share)), "share")
	for state, n := range g.Consumer {
		gauge(descConsumerGroupCount, float64(n), state)
	}
	for state, n := range g.Share {
		gauge(descShareGroupCount, float64(n), state)
	}
	counter(descClassicRebalances, g.ClassicRebalances)
	counter(descConsumerRebalances, g.ConsumerRebalances)
	counter(descShareRebalances, g.ShareRebalances)
	counter(descOffsetCommits, g.OffsetCommits)
	counter(descOffsetsExpired, g.OffsetsExpired)
	gauge(descNumGroups, float64(sum(g.Classic)))
	gauge(descNumGroupsEmpty, float64(g.Classic["Empty"]))
	gauge(descNumGroupsPreparing, float64(g.Classic["PreparingRebalance"]))
	gauge(descNumGroupsCompleting, float64(g.Classic["CompletingRebalance"]))
	gauge(descNumGroupsStable, float64(g.Classic["Stable"]))
	gauge(descNumOffsets, float64(g.Offsets))
	for _, p := range g.SharePartitions {
		part := strconv.Itoa(int(p.Partition))
		gauge(descShareInFlight, float64(p.InFlight), p.Group, p.Topic, part)
		gauge(descShareAcquired, float64(p.Acquired), p.Group, p.Topic, part)
		gauge(descShareLag, float64(p.Lag), p.Group, p.Topic, part)
	}
}
