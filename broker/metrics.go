package broker

// The node's side of the metrics: the registry (infra/metrics) is created
// at Start, fed by the produce and fetch observers, the request observer of
// the Kafka server, the ISR loop and the bucket's metrics sink, and reads
// the rest from the node at scrape time (metricsState). /metrics and
// /debug/pprof/ (admin_pprof_enable) are served on the admin listener.

import (
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/metrics"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// MetricsPath is the admin HTTP path of the Prometheus exposition.
const MetricsPath = "/metrics"

// newMetrics returns the node's registry, whose scrape-time series read n.
func (n *Node) newMetrics() *metrics.Registry { return metrics.New(n.metricsState) }

// metricsHandler serves the node's registry.
func (n *Node) metricsHandler() http.Handler { return n.metrics.Handler() }

// mountMetrics mounts MetricsPath, ReplicationStatusPath and, with
// admin_pprof_enable, Go's profiler under /debug/pprof/ on the admin mux.
func (n *Node) mountMetrics(mux *http.ServeMux) {
	mux.Handle(MetricsPath, n.metricsHandler())
	mux.Handle(ReplicationStatusPath, n.replicationStatusHandler())
	if !n.cfg.AdminPprofEnable {
		return
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// requestObserver adapts the registry to kafka.StageObserver, naming each
// API by Kafka's name, and a Fetch by who sent it, as Kafka's
// RequestMetrics do: FetchFollower for a replica's (replica id >= 0),
// FetchConsumer for a consumer's; no series is named Fetch. It resolves
// each name's series on its first request and keeps them by API key (and
// the follower's Fetch in a slot of its own), so that a request's
// observation looks no label up and allocates nothing.
type requestObserver struct {
	r             *metrics.Registry
	byKey         [128]atomic.Pointer[metrics.RequestSeries] // byKey[fetchKey] is FetchConsumer
	fetchFollower atomic.Pointer[metrics.RequestSeries]
}

// fetchKey is Fetch's API key.
const fetchKey = 1

// Kafka's request names of a Fetch (kafka.network RequestMetrics).
const (
	requestFetchConsumer = "FetchConsumer"
	requestFetchFollower = "FetchFollower"
)

func newRequestObserver(r *metrics.Registry) *requestObserver { return &requestObserver{r: r} }

// ObserveRequest is the total alone; the kafka server calls ObserveStages.
// Without the request it cannot tell a follower's Fetch, which it counts as
// a consumer's.
func (o *requestObserver) ObserveRequest(key, version int16, d time.Duration, err error) {
	o.r.ObserveRequest(requestName(key, false), version, d, err != nil)
}

func (o *requestObserver) ObserveStages(req *kafka.Request, st kafka.RequestStages, err error) {
	o.series(req).Observe(req.Version, metrics.RequestStages(st), err != nil)
}

// series returns the series of req's name, resolving them on first use (two
// first uses racing resolve the same series twice, harmlessly).
func (o *requestObserver) series(req *kafka.Request) *metrics.RequestSeries {
	key := req.Key
	if key < 0 || int(key) >= len(o.byKey) {
		return o.r.RequestSeries(requestName(key, false))
	}
	slot, follower := &o.byKey[key], false
	if key == fetchKey && fromFollower(req.Msg) {
		slot, follower = &o.fetchFollower, true
	}
	if s := slot.Load(); s != nil {
		return s
	}
	s := o.r.RequestSeries(requestName(key, follower))
	slot.Store(s)
	return s
}

// requestName is Kafka's name of a request of key in the request metrics:
// the API's name, but for Fetch, FetchFollower or FetchConsumer.
func requestName(key int16, follower bool) string {
	switch {
	case key != fetchKey:
		return kmsg.NameForKey(key)
	case follower:
		return requestFetchFollower
	}
	return requestFetchConsumer
}

// fromFollower reports whether msg is a Fetch from a replica: its replica
// id, from ReplicaState at v15+ (KIP-903) and ReplicaID before, is >= 0,
// Kafka's FetchRequest.isFromFollower and the test the fetch handler makes.
// A Fetch answered before decoding (nil msg: UNSUPPORTED_VERSION) counts as
// a consumer's.
func fromFollower(msg kmsg.Request) bool {
	f, ok := msg.(*kmsg.FetchRequest)
	if !ok {
		return false
	}
	if f.Version >= 15 {
		return f.ReplicaState.ID >= 0
	}
	return f.ReplicaID >= 0
}

// teeSink reports each bucket operation to several sinks.
type teeSink []objstore.MetricsSink

func (t teeSink) Observe(op string, bytes int64, d time.Duration, err error) {
	for _, s := range t {
		s.Observe(op, bytes, d, err)
	}
}

// bucketSink is the metrics sink of the node's bucket: the in-memory
// counters (n.bucketMetrics, set here) and the Prometheus series.
func (n *Node) bucketSink() objstore.MetricsSink {
	n.bucketMetrics = &objstore.Counters{}
	return teeSink{n.bucketMetrics, n.metrics.ObjectStoreSink()}
}

// metricsState computes the scrape-time series from the control-plane
// cache, the local replicas, the tiering manager and the cold reader. It
// tolerates a node that is still starting (nil parts are skipped).
func (n *Node) metricsState() metrics.NodeState {
	var st metrics.NodeState
	rec := segment.Recovery()
	st.LogRecovery = metrics.LogRecoveryCounters{Bytes: rec.Bytes, Segments: rec.Segments}
	if n.natsMon != nil {
		s := n.natsMon.Stats()
		st.NATS = &metrics.NATSCounters{Disconnects: s.Disconnects, Reconnects: s.Reconnects,
			AsyncErrors: s.AsyncErrors, WatchRestarts: s.WatchRestarts}
	}
	if n.fetchSessions != nil {
		s := n.fetchSessions.Stats()
		st.FetchSessions = &metrics.FetchSessionFigures{Sessions: s.Sessions, Partitions: s.Partitions, Evictions: s.Evictions}
	}
	st.ConsumerLag = n.consumerLagState()
	if n.store == nil || n.replicas == nil {
		return st
	}
	st.ActiveController = n.ctrl != nil && n.controllerID() == n.cfg.NodeID
	leading, under, offline := n.countPartitions(st.ActiveController)
	st.UnderReplicatedPartitions, st.OfflinePartitions = under, offline
	if rl := n.RemoteLog(); rl != nil {
		remote := func(topic string, p int32) []controlplane.RemoteSegment {
			t, ok := n.store.TopicShared(topic) // read only: each partition of a scrape
			if !ok {
				return nil
			}
			return rl.ListRemoteSegments(t.ID, p)
		}
		st.Topics = topicTiering(tierStatusOf(n.cfg.NodeID, leading, remote, "").Partitions)
	}
	if m := n.Tiering(); m != nil {
		s := m.Stats()
		st.Tiering = &metrics.TieringCounters{SegmentsCopied: s.SegmentsUploaded, BytesCopied: s.BytesUploaded,
			CopyErrors: s.UploadFailures, RemoteSegmentsDeleted: s.RemoteSegmentsDeleted, OrphansDeleted: s.OrphansDeleted,
			Passes: s.Passes, DiskFull: s.DiskFull, BucketUnreachable: s.BucketUnreachable}
	}
	if n.cold != nil {
		s := n.cold.Stats()
		st.ColdRead = &metrics.ColdReadCounters{RemoteFetchBytes: s.RemoteFetchBytes, RemoteFetchErrors: s.Errors,
			ChunkHits: s.ChunkHits, ChunkMisses: s.ChunkMisses, GetRequests: s.GetRequests, GetBytes: s.GetBytes,
			ReadAheads: s.ReadAheads, IndexHits: s.IndexHits, IndexMisses: s.IndexMisses, CacheBytes: s.CacheBytes}
	}
	if n.apis != nil {
		st.InternalTopicWrongShape = n.apis.InternalTopicsWrongShape()
	}
	if n.coords != nil {
		st.Groups = n.groupFigures()
		s := n.coords.txns.Stats()
		st.Transactions = &metrics.TransactionFigures{Open: s.Open, OldestOpenSeconds: float64(s.OldestOpenMs) / 1000,
			Committed: s.Committed, Aborted: s.Aborted, TimedOut: s.TimedOut}
	}
	return st
}

// topicTiering sums per-partition tier status lines (sorted by topic) into
// one entry per topic.
func topicTiering(parts []TierPartitionStatus) []metrics.TopicTiering {
	var out []metrics.TopicTiering
	for _, p := range parts {
		if len(out) == 0 || out[len(out)-1].Topic != p.Topic {
			out = append(out, metrics.TopicTiering{Topic: p.Topic})
		}
		t := &out[len(out)-1]
		t.CopyLagBytes += p.UploadLagBytes
		t.CopyLagSegments += int64(p.UploadLagSegments)
		t.RemoteLogSizeBytes += p.RemoteBytes
		t.RemoteSegments += int64(p.RemoteSegments)
	}
	return out
}

// groupFigures gathers the group coordinator's and the share
// coordinator's figures for /metrics.
func (n *Node) groupFigures() *metrics.GroupFigures {
	f := n.coords.groups.Figures()
	g := &metrics.GroupFigures{Classic: f.Classic, Consumer: f.Consumer, Share: map[string]int{}, Offsets: f.Offsets,
		ClassicRebalances: f.ClassicRebalances, ConsumerRebalances: f.ConsumerRebalances, OffsetCommits: f.OffsetCommits,
		OffsetsExpired: f.OffsetsExpired}
	if n.share != nil {
		sf := n.share.coord.Figures()
		g.Share, g.ShareRebalances = sf.Groups, sf.Rebalances
		for _, p := range n.share.parts.Figures() {
			g.SharePartitions = append(g.SharePartitions, metrics.SharePartitionFigures{Group: p.Group, Topic: p.Topic,
				Partition: p.Partition, InFlight: p.InFlight, Acquired: p.Acquired, Lag: p.Lag})
		}
	}
	return g
}

// countPartitions counts what the metrics and the health check report of
// this node's partitions: the replicas it leads (in n.replicas.All's
// order), how many of them the control plane shows under-replicated (an
// ISR smaller than the replicas, with this node the leader), and, when
// controller (only the active controller counts them, as in Kafka), the
// partitions of the cluster without a leader (0 otherwise).
// REQUIRES: n.store and n.replicas set.
func (n *Node) countPartitions(controller bool) (leading []*partition.Replica, underReplicated, offline int) {
	self := n.cfg.NodeID
	for _, rep := range n.replicas.All() {
		if !rep.IsLeader() {
			continue
		}
		leading = append(leading, rep)
		if ps, ok := n.store.PartitionShared(rep.Topic(), rep.Partition()); ok && ps.Leader == self && len(ps.ISR) < len(ps.Replicas) {
			underReplicated++
		}
	}
	if controller {
		for _, t := range n.store.Topics() {
			for _, ps := range n.store.PartitionsShared(t.Name) {
				if ps.Leader < 0 {
					offline++
				}
			}
		}
	}
	return leading, underReplicated, offline
}
