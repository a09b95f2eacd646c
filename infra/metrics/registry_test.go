package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shale-io/shale/infra/buildinfo"
	"github.com/shale-io/shale/infra/objstore"
)

// scrape GETs the handler's text exposition and parses it.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	return fams
}

// sample returns the value of the series name{labels} (a counter, gauge or
// untyped value, or a histogram's count), and whether it exists.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, lp := range m.Label {
			got[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func want(t *testing.T, fams map[string]*dto.MetricFamily, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := sample(fams, name, labels...)
	if !ok {
		t.Errorf("no series %s%v", name, labels)
		return
	}
	if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

func TestTrafficSeries(t *testing.T) {
	r := New(nil)
	r.Produced("a", 100, 3)
	r.Produced("a", 50, 2)
	r.Produced("b", 7, 1)
	r.Fetched("a", 120)
	r.Replicated("a", 30)
	r.ObserveRequest("Produce", 9, 2*time.Millisecond, false)
	r.ObserveRequest("Produce", 9, 3*time.Millisecond, false)
	r.ObserveRequest("Fetch", 12, time.Millisecond, true)
	r.ISRChanged(true, false)
	r.ISRChanged(true, true)
	sink := r.ObjectStoreSink()
	sink.Observe(objstore.OpPut, 1000, time.Millisecond, nil)
	sink.Observe(objstore.OpGet, 0, time.Millisecond, fmt.Errorf("get x: %w", objstore.ErrNotFound))
	sink.Observe(objstore.OpGet, 0, time.Millisecond, errors.New("connection reset"))

	f := scrape(t, r.Handler())
	want(t, f, 150, "kafka_server_brokertopicmetrics_bytes_in_total", "topic", "a")
	want(t, f, 5, "kafka_server_brokertopicmetrics_messages_in_total", "topic", "a")
	want(t, f, 1, "kafka_server_brokertopicmetrics_messages_in_total", "topic", "b")
	want(t, f, 120, "kafka_server_brokertopicmetrics_bytes_out_total", "topic", "a")
	want(t, f, 30, "kafka_server_brokertopicmetrics_replication_bytes_out_total", "topic", "a")
	want(t, f, 2, "kafka_network_requestmetrics_requests_total", "request", "Produce", "version", "9")
	want(t, f, 2, "kafka_network_requestmetrics_total_time_seconds", "request", "Produce")
	want(t, f, 1, "shale_network_request_failures_total", "request", "Fetch")
	if _, ok := sample(f, "shale_network_request_failures_total", "request", "Produce"); ok {
		t.Errorf("a failure series for Produce, which never failed")
	}
	want(t, f, 2, "kafka_server_replicamanager_isr_shrinks_total")
	want(t, f, 1, "kafka_server_replicamanager_isr_expands_total")
	want(t, f, 1, "shale_objstore_requests_total", "operation", "put")
	want(t, f, 1000, "shale_objstore_bytes_total", "operation", "put")
	want(t, f, 2, "shale_objstore_requests_total", "operation", "get")
	want(t, f, 1, "shale_objstore_errors_total", "operation", "get", "reason", "not_found")
	want(t, f, 1, "shale_objstore_errors_total", "operation", "get", "reason", "error")
	want(t, f, 2, "shale_objstore_request_duration_seconds", "operation", "get")
	if _, ok := sample(f, "go_goroutines"); !ok {
		t.Errorf("no Go runtime series")
	}
}

func TestStateSeries(t *testing.T) {
	st := NodeState{ActiveController: true, UnderReplicatedPartitions: 2, OfflinePartitions: 1,
		Topics:                  []TopicTiering{{Topic: "cold", CopyLagBytes: 4096, CopyLagSegments: 2, RemoteLogSizeBytes: 9000, RemoteSegments: 3}},
		Tiering:                 &TieringCounters{SegmentsCopied: 3, BytesCopied: 9000, CopyErrors: 1, Passes: 10},
		ColdRead:                &ColdReadCounters{RemoteFetchBytes: 500, ChunkHits: 3, ChunkMisses: 1, CacheBytes: 2048},
		Transactions:            &TransactionFigures{Open: 2, OldestOpenSeconds: 1.5, Committed: 7, Aborted: 3, TimedOut: 1},
		InternalTopicWrongShape: map[string]bool{"__consumer_offsets": true, "__transaction_state": false},
		NATS:                    &NATSCounters{Disconnects: 4, Reconnects: 3, AsyncErrors: 6, WatchRestarts: 2},
		LogRecovery:             LogRecoveryCounters{Bytes: 123456, Segments: 5}}
	r := New(func() NodeState { return st })
	f := scrape(t, r.Handler())
	want(t, f, 1, "kafka_controller_kafkacontroller_active_controller_count")
	want(t, f, 2, "kafka_server_replicamanager_under_replicated_partitions")
	want(t, f, 1, "kafka_controller_kafkacontroller_offline_partitions_count")
	want(t, f, 4096, "kafka_server_brokertopicmetrics_remote_copy_lag_bytes", "topic", "cold")
	want(t, f, 2, "kafka_server_brokertopicmetrics_remote_copy_lag_segments", "topic", "cold")
	want(t, f, 9000, "kafka_server_brokertopicmetrics_remote_log_size_bytes", "topic", "cold")
	want(t, f, 3, "kafka_server_brokertopicmetrics_remote_log_metadata_count", "topic", "cold")
	want(t, f, 9000, "kafka_server_brokertopicmetrics_remote_copy_bytes_total")
	want(t, f, 3, "kafka_server_brokertopicmetrics_remote_copy_requests_total")
	want(t, f, 1, "kafka_server_brokertopicmetrics_remote_copy_errors_total")
	want(t, f, 500, "kafka_server_brokertopicmetrics_remote_fetch_bytes_total")
	want(t, f, 0.75, "shale_coldread_chunk_cache_hit_ratio")
	want(t, f, 2048, "shale_coldread_chunk_cache_bytes")
	want(t, f, 2, "shale_transactions_open")
	want(t, f, 1, "shale_internal_topic_wrong_shape", "topic", "__consumer_offsets")
	want(t, f, 0, "shale_internal_topic_wrong_shape", "topic", "__transaction_state")
	want(t, f, 1.5, "shale_transactions_oldest_open_seconds")
	want(t, f, 7, "shale_transactions_committed_total")
	want(t, f, 3, "shale_transactions_aborted_total")
	want(t, f, 1, "shale_transactions_timed_out_total")
	want(t, f, 4, "shale_nats_disconnects_total")
	want(t, f, 3, "shale_nats_reconnects_total")
	want(t, f, 6, "shale_nats_async_errors_total")
	want(t, f, 2, "shale_controlplane_watch_restarts_total")
	want(t, f, 123456, "shale_log_recovery_bytes_total")
	want(t, f, 5, "shale_log_recovery_segments_total")
	bi := buildinfo.Read()
	want(t, f, 1, "shale_build_info", "version", bi.Version, "revision", bi.ShortRevision(), "goversion", bi.GoVersion)

	// Without a cold tier the tiering series are absent, not zero.
	st = NodeState{}
	f = scrape(t, r.Handler())
	want(t, f, 0, "kafka_controller_kafkacontroller_active_controller_count")
	if _, ok := sample(f, "kafka_server_brokertopicmetrics_remote_fetch_bytes_total"); ok {
		t.Errorf("remote fetch series without a cold reader")
	}
}

// TestNilRegistry: a nil Registry ignores observations.
func TestNilRegistry(t *testing.T) {
	var r *Registry
	r.Produced("a", 1, 1)
	r.Fetched("a", 1)
	r.Replicated("a", 1)
	r.ObserveRequest("Produce", 3, time.Millisecond, false)
	r.ISRChanged(true, true)
	r.ObjectStoreSink().Observe(objstore.OpPut, 1, time.Millisecond, nil)
}

func TestConsumerLagSeries(t *testing.T) {
	st := NodeState{ConsumerLag: &ConsumerLagSample{At: 1.7e9, Groups: []ConsumerGroupLag{{
		Group: "g", Members: 2, Partitions: []ConsumerPartitionLag{
			{Topic: "a", Partition: 0, Committed: 10, Lag: 5, TimeLagSeconds: 3.5},
			{Topic: "a", Partition: 1, Committed: -1, Lag: 7, TimeLagSeconds: -1},
			{Topic: "b", Partition: 0, Committed: 4, Lag: 0, TimeLagSeconds: 0},
		}}}}}
	f := scrape(t, New(func() NodeState { return st }).Handler())
	want(t, f, 1.7e9, "shale_consumergroup_lag_sample_timestamp_seconds")
	want(t, f, 2, "kafka_consumergroup_members", "consumergroup", "g")
	want(t, f, 10, "kafka_consumergroup_current_offset", "consumergroup", "g", "topic", "a", "partition", "0")
	want(t, f, 5, "kafka_consumergroup_lag", "consumergroup", "g", "topic", "a", "partition", "0")
	want(t, f, 7, "kafka_consumergroup_lag", "consumergroup", "g", "topic", "a", "partition", "1")
	want(t, f, 12, "kafka_consumergroup_lag_sum", "consumergroup", "g", "topic", "a")
	want(t, f, 10, "kafka_consumergroup_current_offset_sum", "consumergroup", "g", "topic", "a")
	want(t, f, 0, "kafka_consumergroup_lag_sum", "consumergroup", "g", "topic", "b")
	want(t, f, 3.5, "shale_consumergroup_lag_seconds", "consumergroup", "g", "topic", "a", "partition", "0")
	want(t, f, 3.5, "shale_consumergroup_max_lag_seconds", "consumergroup", "g")
	if _, ok := sample(f, "kafka_consumergroup_current_offset", "consumergroup", "g", "topic", "a", "partition", "1"); ok {
		t.Error("a current_offset series for a partition without a commit")
	}
	if _, ok := sample(f, "shale_consumergroup_lag_seconds", "consumergroup", "g", "topic", "a", "partition", "1"); ok {
		t.Error("a lag_seconds series for an unknown time lag")
	}
	st = NodeState{}
	f = scrape(t, New(func() NodeState { return st }).Handler())
	if _, ok := sample(f, "shale_consumergroup_lag_sample_timestamp_seconds"); ok {
		t.Error("lag series without a sample")
	}
}

// TestNames lists series before their first observation, and the
// scrape-time and runtime series.
func TestNames(t *testing.T) {
	names := New(func() NodeState { return NodeState{} }).Names()
	for _, n := range []string{"kafka_server_brokertopicmetrics_bytes_in_total", "kafka_network_requestmetrics_total_time_seconds",
		"shale_objstore_errors_total", "kafka_consumergroup_lag", "shale_build_info", "shale_internal_topic_wrong_shape", "go_goroutines", "process_resident_memory_bytes"} {
		if !slices.Contains(names, n) {
			t.Errorf("Names() lacks %s", n)
		}
	}
	if !slices.IsSorted(names) {
		t.Error("Names() not sorted")
	}
	if got := New(nil).Names(); slices.Contains(got, "kafka_consumergroup_lag") {
		t.Error("scrape-time series named without a state")
	}
}

// The runtime's CPU classes are exposed beside the default Go series: an
// idle node's CPU split into user code, collection and scavenging.
func TestGoCPUClassesSeries(t *testing.T) {
	r := New(nil)
	for range 3 {
		sink = make([]byte, 1<<20) // something to collect
	}
	runtime.GC()
	fams := scrape(t, r.Handler())
	for _, name := range []string{"go_cpu_classes_gc_total_cpu_seconds_total", "go_cpu_classes_scavenge_total_cpu_seconds_total",
		"go_cpu_classes_user_cpu_seconds_total", "go_cpu_classes_total_cpu_seconds_total", "go_memstats_alloc_bytes_total", "go_gc_duration_seconds"} {
		if fams[name] == nil {
			t.Errorf("no series %s", name)
		}
	}
	if gc, _ := sample(fams, "go_cpu_classes_gc_total_cpu_seconds_total"); gc <= 0 {
		t.Errorf("go_cpu_classes_gc_total_cpu_seconds_total = %v after a collection; want it above 0", gc)
	}
}

var sink []byte
