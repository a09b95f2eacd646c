package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// NodeState is what a node reports at scrape time: figures that are cheaper
// to compute on demand than to keep current, and the counters that other
// components already keep.
type NodeState struct {
	// ActiveController is true on the node holding the controller lease.
	ActiveController bool
	// UnderReplicatedPartitions counts the partitions this node leads whose
	// ISR is smaller than their replica set.
	UnderReplicatedPartitions int
	// OfflinePartitions counts partitions with no leader; as in Kafka, only
	// the active controller reports it (others report 0).
	OfflinePartitions int
	// Topics holds the remote-log figures of the partitions this node
	// leads, one entry per topic; nil without a cold tier.
	Topics []TopicTiering
	// Tiering is the tiering loop's counters; nil without a cold tier.
	Tiering *TieringCounters
	// ColdRead is the cold reader's counters; nil without a cold tier.
	ColdRead *ColdReadCounters
	// Transactions is the transaction coordinator's figures; nil without
	// one.
	Transactions *TransactionFigures
	// InternalTopicWrongShape holds each internal topic that exists
	// (__consumer_offsets, __transaction_state): true when its partition
	// count, replication factor or cleanup.policy is not its
	// coordinator's.
	InternalTopicWrongShape map[string]bool
	// NATS is the control-plane connection's counters; nil before it is
	// made.
	NATS *NATSCounters
	// LogRecovery is what opening the local logs read since the process
	// started (segment.Recovery).
	LogRecovery LogRecoveryCounters
	// FetchSessions is the fetch session cache's figures; nil before the
	// Kafka APIs are registered.
	FetchSessions *FetchSessionFigures
	// ConsumerLag is the last consumer-lag sample of the groups this node
	// coordinates (package lag); nil when sampling is off or before the
	// first sample.
	ConsumerLag *ConsumerLagSample
	// Groups is the group and share coordinators' figures (groups.go);
	// nil before the coordinators are built.
	Groups *GroupFigures
}

// ConsumerLagSample is one sample of the lag of a node's groups.
type ConsumerLagSample struct {
	// At is the sample's time, in Unix seconds.
	At     float64
	Groups []ConsumerGroupLag
}

// ConsumerGroupLag is one group's lag.
type ConsumerGroupLag struct {
	Group      string
	Members    int
	Partitions []ConsumerPartitionLag
}

// ConsumerPartitionLag is one partition's lag for a group.
type ConsumerPartitionLag struct {
	Topic     string
	Partition int32
	// Committed is the committed offset, -1 without one (then no
	// current_offset series).
	Committed int64
	Lag       int64
	// TimeLagSeconds is the age of the oldest unconsumed record, -1 when
	// not known (then no lag_seconds series).
	TimeLagSeconds float64
}

// LogRecoveryCounters are the totals of opening local partition logs.
type LogRecoveryCounters struct {
	// Bytes of segment files read (or overwritten) to check or recover
	// the logs: what the logs hold past their recovery points, not their
	// preallocated indexes.
	Bytes int64
	// Segments re-read batch by batch (after an unclean stop).
	Segments int64
}

// FetchSessionFigures are the incremental fetch session cache's figures
// (Kafka's FetchSessionCache metrics).
type FetchSessionFigures struct {
	Sessions, Partitions int
	Evictions            uint64 // since the node started
}

// NATSCounters are the node's NATS connection totals since it started.
type NATSCounters struct {
	Disconnects, Reconnects uint64
	AsyncErrors             uint64
	// WatchRestarts counts control-plane watches re-established after
	// their subscription ended or stalled.
	WatchRestarts uint64
}

// TransactionFigures are the transaction coordinator's figures: open
// transactions now, over the state partitions this node leads, and totals
// since the node started.
type TransactionFigures struct {
	Open                         int
	OldestOpenSeconds            float64
	Committed, Aborted, TimedOut int64
}

// TopicTiering is one topic's remote-log figures over the partitions this
// node leads.
type TopicTiering struct {
	Topic string
	// CopyLagBytes and CopyLagSegments count closed local segments not yet
	// copied to the bucket.
	CopyLagBytes    int64
	CopyLagSegments int64
	// RemoteLogSizeBytes and RemoteSegments count the copied segments.
	RemoteLogSizeBytes int64
	RemoteSegments     int64
}

// TieringCounters are the tiering loop's totals since the node started.
type TieringCounters struct {
	SegmentsCopied        uint64
	BytesCopied           uint64
	CopyErrors            uint64
	RemoteSegmentsDeleted uint64
	OrphansDeleted        uint64
	Passes                uint64
	DiskFull              bool
	BucketUnreachable     bool
}

// ColdReadCounters are the cold reader's totals since the node started.
type ColdReadCounters struct {
	RemoteFetchBytes  int64
	RemoteFetchErrors int64
	ChunkHits         int64
	ChunkMisses       int64
	GetRequests       int64
	GetBytes          int64
	ReadAheads        int64
	IndexHits         int64
	IndexMisses       int64
	CacheBytes        int64
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descActiveController = desc("kafka_controller_kafkacontroller_active_controller_count",
		"1 on the node holding the controller lease, else 0 (Kafka ActiveControllerCount).")
	descUnderReplicated = desc("kafka_server_replicamanager_under_replicated_partitions",
		"Partitions this node leads whose ISR is smaller than their replicas (Kafka UnderReplicatedPartitions).")
	descOffline = desc("kafka_controller_kafkacontroller_offline_partitions_count",
		"Partitions without a leader; reported by the active controller only (Kafka OfflinePartitionsCount).")

	descCopyLagBytes = desc("kafka_server_brokertopicmetrics_remote_copy_lag_bytes",
		"Bytes of closed local segments not yet copied to the bucket, over the partitions this node leads, per topic (KIP-963 RemoteCopyLagBytes).", "topic")
	descCopyLagSegments = desc("kafka_server_brokertopicmetrics_remote_copy_lag_segments",
		"Closed local segments not yet copied to the bucket, over the partitions this node leads, per topic (KIP-963 RemoteCopyLagSegments).", "topic")
	descRemoteLogSize = desc("kafka_server_brokertopicmetrics_remote_log_size_bytes",
		"Bytes of copied remote segments of the partitions this node leads, per topic (KIP-963 RemoteLogSizeBytes).", "topic")
	descRemoteSegments = desc("kafka_server_brokertopicmetrics_remote_log_metadata_count",
		"Copied remote segments of the partitions this node leads, per topic (KIP-963 RemoteLogMetadataCount).", "topic")

	descCopyBytes = desc("kafka_server_brokertopicmetrics_remote_copy_bytes_total",
		"Segment bytes copied to the bucket (KIP-405 RemoteCopyBytesPerSec).")
	descCopyRequests = desc("kafka_server_brokertopicmetrics_remote_copy_requests_total",
		"Segments copied to the bucket (KIP-405 RemoteCopyRequestsPerSec).")
	descCopyErrors = desc("kafka_server_brokertopicmetrics_remote_copy_errors_total",
		"Segment copies that failed (KIP-405 RemoteCopyErrorsPerSec).")
	descDeleteRequests = desc("kafka_server_brokertopicmetrics_remote_delete_requests_total",
		"Remote segments deleted by retention (KIP-963 RemoteDeleteRequestsPerSec).")
	descOrphans = desc("shale_tiering_orphans_deleted_total",
		"Bucket objects and abandoned metadata records removed by the reconciler.")
	descPasses   = desc("shale_tiering_passes_total", "Tiering passes run.")
	descDiskFull = desc("shale_tiering_disk_full",
		"1 while the data disk is above its high watermark and local retention runs early.")
	descBucketUnreachable = desc("shale_tiering_bucket_unreachable",
		"1 while the bucket fails the tiering loop's requests: uploads wait and local segments are kept.")

	descRemoteFetchBytes = desc("kafka_server_brokertopicmetrics_remote_fetch_bytes_total",
		"Record batch bytes read from remote segments for fetches (KIP-405 RemoteFetchBytesPerSec).")
	descRemoteFetchErrors = desc("kafka_server_brokertopicmetrics_remote_fetch_errors_total",
		"Remote reads and index lookups that failed (KIP-405 RemoteFetchErrorsPerSec).")
	descChunkHits = desc("shale_coldread_chunk_cache_hits_total",
		"Cold-read chunk lookups served from the chunk cache or a load in flight.")
	descChunkMisses = desc("shale_coldread_chunk_cache_misses_total",
		"Cold-read chunk lookups that had to GET from the bucket.")
	descChunkHitRatio = desc("shale_coldread_chunk_cache_hit_ratio",
		"Chunk-cache hits over lookups since the node started; 0 before the first lookup.")
	descCacheBytes  = desc("shale_coldread_chunk_cache_bytes", "Bytes held in the cold-read chunk cache.")
	descGetRequests = desc("shale_coldread_get_requests_total",
		"Ranged GETs issued by cold reads (chunks and index objects).")
	descGetBytes    = desc("shale_coldread_get_bytes_total", "Bytes received by cold-read GETs.")
	descReadAheads  = desc("shale_coldread_read_aheads_total", "Chunks queued for read-ahead by sequential cold reads.")
	descIndexHits   = desc("shale_coldread_index_cache_hits_total", "Remote offset and time index lookups served from cache.")
	descIndexMisses = desc("shale_coldread_index_cache_misses_total", "Remote offset and time index lookups that had to GET.")

	descTxnOpen = desc("shale_transactions_open",
		"Transactions ongoing or waiting for their markers, over the __transaction_state partitions this node leads.")
	descTxnOldest = desc("shale_transactions_oldest_open_seconds",
		"Age of the oldest open transaction this node coordinates; 0 when none.")
	descTxnCommitted = desc("shale_transactions_committed_total", "Transactions this node completed with a commit.")
	descTxnAborted   = desc("shale_transactions_aborted_total", "Transactions this node completed with an abort (timeouts included).")
	descTxnTimedOut  = desc("shale_transactions_timed_out_total",
		"Transactions this node aborted because they passed their timeout (transaction.timeout.ms).")

	descInternalTopicWrongShape = desc("shale_internal_topic_wrong_shape",
		"1 while an internal topic exists with another partition count, fewer replicas or another cleanup.policy than its coordinator needs (the node logs what differs at Error), else 0; per existing internal topic.", "topic")

	descNATSDisconnects = desc("shale_nats_disconnects_total", "Times the node's NATS connection was lost (not closed by the node).")
	descNATSReconnects  = desc("shale_nats_reconnects_total", "Times the node's NATS connection was re-established after a loss.")
	descNATSAsyncErrors = desc("shale_nats_async_errors_total",
		"Asynchronous errors of the node's NATS client: a consumer's missed heartbeats, a slow consumer, a permission violation.")
	descFetchSessions = desc("kafka_server_fetchsessioncache_num_incremental_fetch_sessions",
		"Incremental fetch sessions (KIP-227) this node holds for consumers and followers (Kafka NumIncrementalFetchSessions).")
	descFetchSessionPartitions = desc("kafka_server_fetchsessioncache_num_incremental_fetch_partitions_cached",
		"Partitions cached over all incremental fetch sessions (Kafka NumIncrementalFetchPartitionsCached).")
	descFetchSessionEvictions = desc("kafka_server_fetchsessioncache_incremental_fetch_session_evictions_total",
		"Incremental fetch sessions evicted to make room for a new one (Kafka IncrementalFetchSessionEvictionsPerSec).")
	descWatchRestarts = desc("shale_controlplane_watch_restarts_total",
		"Control-plane bucket watches re-established after their subscription ended or stalled.")

	descRecoveryBytes = desc("shale_log_recovery_bytes_total",
		"Bytes of segment files read to check or recover the local logs when they were opened (batches re-read after an unclean stop, index entries and batch headers checked).")
	descRecoverySegments = desc("shale_log_recovery_segments_total",
		"Segments re-read batch by batch when the local logs were opened (after an unclean stop or a failed check).")
)

var (
	descGroupOffset = desc("kafka_consumergroup_current_offset",
		"Committed offset of a consumer group on a partition, for the groups this node coordinates (kafka_exporter's name).", "consumergroup", "topic", "partition")
	descGroupOffsetSum = desc("kafka_consumergroup_current_offset_sum",
		"Committed offsets of a consumer group summed over a topic's partitions.", "consumergroup", "topic")
	descGroupLag = desc("kafka_consumergroup_lag",
		"Records of a partition a consumer group has not consumed: the high watermark less the committed offset (the log start without one), at the last sample.", "consumergroup", "topic", "partition")
	descGroupLagSum = desc("kafka_consumergroup_lag_sum",
		"kafka_consumergroup_lag summed over a topic's partitions.", "consumergroup", "topic")
	descGroupMembers = desc("kafka_consumergroup_members",
		"Members of a consumer group at the last sample.", "consumergroup")
	descGroupLagSeconds = desc("shale_consumergroup_lag_seconds",
		"Age of the oldest record of a partition a consumer group has not consumed (its timestamp to the sample), 0 when caught up.", "consumergroup", "topic", "partition")
	descGroupMaxLagSeconds = desc("shale_consumergroup_max_lag_seconds",
		"The largest shale_consumergroup_lag_seconds of a group.", "consumergroup")
	descLagSampleTime = desc("shale_consumergroup_lag_sample_timestamp_seconds",
		"Unix time of the consumer-lag sample the kafka_consumergroup_* series of this node come from.")
)

var allStateDescs = []*prometheus.Desc{
	descGroupOffset, descGroupOffsetSum, descGroupLag, descGroupLagSum, descGroupMembers,
	descGroupLagSeconds, descGroupMaxLagSeconds, descLagSampleTime,
	descActiveController, descUnderReplicated, descOffline,
	descCopyLagBytes, descCopyLagSegments, descRemoteLogSize, descRemoteSegments,
	descCopyBytes, descCopyRequests, descCopyErrors, descDeleteRequests, descOrphans, descPasses, descDiskFull, descBucketUnreachable,
	descRemoteFetchBytes, descRemoteFetchErrors, descChunkHits, descChunkMisses, descChunkHitRatio, descCacheBytes,
	descGetRequests, descGetBytes, descReadAheads, descIndexHits, descIndexMisses,
	descTxnOpen, descTxnOldest, descTxnCommitted, descTxnAborted, descTxnTimedOut,
	descNATSDisconnects, descNATSReconnects, descNATSAsyncErrors, descWatchRestarts,
	descRecoveryBytes, descRecoverySegments, descInternalTopicWrongShape,
	descFetchSessions, descFetchSessionPartitions, descFetchSessionEvictions,
}

// stateCollector turns a NodeState read at scrape time into series.
type stateCollector struct {
	state func() NodeState
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allStateDescs {
		ch <- d
	}
	for _, d := range groupDescs {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.state()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(descActiveController, boolValue(st.ActiveController))
	gauge(descUnderReplicated, float64(st.UnderReplicatedPartitions))
	gauge(descOffline, float64(st.OfflinePartitions))
	for _, t := range st.Topics {
		gauge(descCopyLagBytes, float64(t.CopyLagBytes), t.Topic)
		gauge(descCopyLagSegments, float64(t.CopyLagSegments), t.Topic)
		gauge(descRemoteLogSize, float64(t.RemoteLogSizeBytes), t.Topic)
		gauge(descRemoteSegments, float64(t.RemoteSegments), t.Topic)
	}
	if t := st.Tiering; t != nil {
		counter(descCopyBytes, float64(t.BytesCopied))
		counter(descCopyRequests, float64(t.SegmentsCopied))
		counter(descCopyErrors, float64(t.CopyErrors))
		counter(descDeleteRequests, float64(t.RemoteSegmentsDeleted))
		counter(descOrphans, float64(t.OrphansDeleted))
		counter(descPasses, float64(t.Passes))
		gauge(descDiskFull, boolValue(t.DiskFull))
		gauge(descBucketUnreachable, boolValue(t.BucketUnreachable))
	}
	if r := st.ColdRead; r != nil {
		counter(descRemoteFetchBytes, float64(r.RemoteFetchBytes))
		counter(descRemoteFetchErrors, float64(r.RemoteFetchErrors))
		counter(descChunkHits, float64(r.ChunkHits))
		counter(descChunkMisses, float64(r.ChunkMisses))
		ratio := 0.0
		if n := r.ChunkHits + r.ChunkMisses; n > 0 {
			ratio = float64(r.ChunkHits) / float64(n)
		}
		gauge(descChunkHitRatio, ratio)
		gauge(descCacheBytes, float64(r.CacheBytes))
		counter(descGetRequests, float64(r.GetRequests))
		counter(descGetBytes, float64(r.GetBytes))
		counter(descReadAheads, float64(r.ReadAheads))
		counter(descIndexHits, float64(r.IndexHits))
		counter(descIndexMisses, float64(r.IndexMisses))
	}
	if g := st.Groups; g != nil {
		collectGroups(ch, g)
	}
	if x := st.Transactions; x != nil {
		gauge(descTxnOpen, float64(x.Open))
		gauge(descTxnOldest, x.OldestOpenSeconds)
		counter(descTxnCommitted, float64(x.Committed))
		counter(descTxnAborted, float64(x.Aborted))
		counter(descTxnTimedOut, float64(x.TimedOut))
	}
	for topic, wrong := range st.InternalTopicWrongShape {
		gauge(descInternalTopicWrongShape, boolValue(wrong), topic)
	}
	if x := st.NATS; x != nil {
		counter(descNATSDisconnects, float64(x.Disconnects))
		counter(descNATSReconnects, float64(x.Reconnects))
		counter(descNATSAsyncErrors, float64(x.AsyncErrors))
		counter(descWatchRestarts, float64(x.WatchRestarts))
	}
	counter(descRecoveryBytes, float64(st.LogRecovery.Bytes))
	counter(descRecoverySegments, float64(st.LogRecovery.Segments))
	if x := st.FetchSessions; x != nil {
		gauge(descFetchSessions, float64(x.Sessions))
		gauge(descFetchSessionPartitions, float64(x.Partitions))
		counter(descFetchSessionEvictions, float64(x.Evictions))
	}
	if x := st.ConsumerLag; x != nil {
		collectConsumerLag(ch, x)
	}
}

func collectConsumerLag(ch chan<- prometheus.Metric, x *ConsumerLagSample) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descLagSampleTime, x.At)
	type sums struct{ offset, lag float64 }
	for _, g := range x.Groups {
		gauge(descGroupMembers, float64(g.Members), g.Group)
		byTopic := map[string]*sums{}
		var topics []string
		maxSeconds := -1.0
		for _, p := range g.Partitions {
			part := strconv.Itoa(int(p.Partition))
			t := byTopic[p.Topic]
			if t == nil {
				t = &sums{}
				byTopic[p.Topic] = t
				topics = append(topics, p.Topic)
			}
			if p.Committed >= 0 {
				gauge(descGroupOffset, float64(p.Committed), g.Group, p.Topic, part)
				t.offset += float64(p.Committed)
			}
			if p.Lag >= 0 {
				gauge(descGroupLag, float64(p.Lag), g.Group, p.Topic, part)
				t.lag += float64(p.Lag)
			}
			if p.TimeLagSeconds >= 0 {
				gauge(descGroupLagSeconds, p.TimeLagSeconds, g.Group, p.Topic, part)
				maxSeconds = max(maxSeconds, p.TimeLagSeconds)
			}
		}
		for _, topic := range topics {
			gauge(descGroupOffsetSum, byTopic[topic].offset, g.Group, topic)
			gauge(descGroupLagSum, byTopic[topic].lag, g.Group, topic)
		}
		if maxSeconds >= 0 {
			gauge(descGroupMaxLagSeconds, maxSeconds, g.Group)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
