package broker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testnode"
)

// scrapeMetrics GETs /metrics from a node's admin listener and parses it.
func scrapeMetrics(t *testing.T, n *broker.Node) map[string]*dto.MetricFamily {
	t.Helper()
	body := adminGet(t, n, broker.MetricsPath)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// adminGet GETs path from the node's admin listener and fails unless the
// answer is 200.
func adminGet(t *testing.T, n *broker.Node, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.AdminAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, err %v: %.200s", path, resp.StatusCode, err, b)
	}
	return string(b)
}

// metricValue sums the series of the family name whose labels include
// labels (name, value pairs): counters, gauges and histogram counts. ok is
// false when no series matches.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (sum float64, ok bool) {
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
		ok = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, ok
}

// mustMetric is metricValue that fails when the series is absent.
func mustMetric(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	v, ok := metricValue(fams, name, labels...)
	if !ok {
		t.Fatalf("no series %s%v on /metrics", name, labels)
	}
	return v
}

// TestMetricsAfterTraffic produces to a plain and a tiered topic, waits
// for segments to be copied to the bucket and deleted locally, consumes
// everything (the tiered topic from the cold tier), and checks that the key
// series moved and that the admin listener serves pprof (admin_pprof_enable).
func TestMetricsAfterTraffic(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), testnode.WithTiering(100*time.Millisecond),
		func(c *config.Broker) { c.AdminPprofEnable = true })
	ctx := ctxT(t, 150*time.Second)
	adm := kadm.NewClient(newClient(t, n.KafkaAddr()))
	tiered := map[string]*string{"segment.bytes": new("16384"), "local.retention.bytes": new("32768"),
		"remote.storage.enable": new("true")}
	for topic, cfg := range map[string]map[string]*string{"hot": nil, "cold": tiered} {
		if r, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	before := scrapeMetrics(t, n)
	if v := mustMetric(t, before, "kafka_controller_kafkacontroller_active_controller_count"); v != 1 {
		t.Fatalf("active controller %v on the only node", v)
	}

	const hot, cold = 50, 1000
	prod := newClient(t, n.KafkaAddr(), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(8<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordDeliveryTimeout(30*time.Second))
	var recs []*kgo.Record
	for i := range hot {
		recs = append(recs, &kgo.Record{Topic: "hot", Value: fmt.Appendf(nil, "hot-%03d", i),
			Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Append(nil, i)}}})
	}
	for i := range cold {
		recs = append(recs, &kgo.Record{Topic: "cold", Value: fmt.Appendf(nil, "%0200d", i),
			Headers: []kgo.RecordHeader{{Key: "i", Value: fmt.Append(nil, i)}}})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Tiering copies the closed segments and local retention drops the
	// oldest, so that offset 0 is only in the bucket.
	waitFor(t, 90*time.Second, "cold segments tiered and deleted locally", func() bool {
		rep := replicaOn(n, "cold", 0)
		return rep != nil && rep.Log().LogStartOffset() > 0 && n.Tiering().Stats().SegmentsUploaded > 0
	})
	if got := consumeAll(t, n.KafkaAddr(), "hot", hot); len(got) != hot {
		t.Fatalf("consumed %d hot records, want %d", len(got), hot)
	}
	if got := consumeAll(t, n.KafkaAddr(), "cold", cold); len(got) != cold {
		t.Fatalf("consumed %d cold records, want %d", len(got), cold)
	}

	f := scrapeMetrics(t, n)
	if v := mustMetric(t, f, "kafka_server_brokertopicmetrics_messages_in_total", "topic", "hot"); v != hot {
		t.Errorf("messages in for hot: %v, want %d", v, hot)
	}
	if v := mustMetric(t, f, "kafka_server_brokertopicmetrics_messages_in_total", "topic", "cold"); v != cold {
		t.Errorf("messages in for cold: %v, want %d", v, cold)
	}
	if v := mustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_in_total", "topic", "cold"); v < cold*200 {
		t.Errorf("bytes in for cold: %v, want at least %d", v, cold*200)
	}
	for _, topic := range []string{"hot", "cold"} {
		in := mustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_in_total", "topic", topic)
		out := mustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_out_total", "topic", topic)
		if out < in/2 {
			t.Errorf("bytes out for %s: %v after consuming everything of %v bytes in", topic, out, in)
		}
	}
	for _, api := range []string{"Produce", "FetchConsumer", "Metadata", "CreateTopics", "ApiVersions"} {
		if v := mustMetric(t, f, "kafka_network_requestmetrics_total_time_seconds", "request", api); v < 1 {
			t.Errorf("no %s request in the latency histogram", api)
		}
		if v := mustMetric(t, f, "kafka_network_requestmetrics_requests_total", "request", api); v < 1 {
			t.Errorf("no %s request counted", api)
		}
	}
	if v := mustMetric(t, f, "kafka_server_replicamanager_under_replicated_partitions"); v != 0 {
		t.Errorf("under-replicated partitions %v with replication factor 1", v)
	}
	if v := mustMetric(t, f, "kafka_controller_kafkacontroller_offline_partitions_count"); v != 0 {
		t.Errorf("offline partitions %v on a live single node", v)
	}
	for _, name := range []string{"kafka_server_brokertopicmetrics_remote_copy_requests_total",
		"kafka_server_brokertopicmetrics_remote_copy_bytes_total", "kafka_server_brokertopicmetrics_remote_fetch_bytes_total",
		"shale_coldread_get_requests_total", "shale_tiering_passes_total"} {
		if v := mustMetric(t, f, name); v <= 0 {
			t.Errorf("%s = %v after tiering and a cold read", name, v)
		}
	}
	if v := mustMetric(t, f, "kafka_server_brokertopicmetrics_remote_log_size_bytes", "topic", "cold"); v <= 0 {
		t.Errorf("remote log size of cold: %v", v)
	}
	if v := mustMetric(t, f, "kafka_server_brokertopicmetrics_remote_log_size_bytes", "topic", "hot"); v != 0 {
		t.Errorf("remote log size of the untiered topic: %v", v)
	}
	mustMetric(t, f, "kafka_server_brokertopicmetrics_remote_copy_lag_segments", "topic", "cold")
	mustMetric(t, f, "kafka_server_brokertopicmetrics_remote_copy_lag_bytes", "topic", "cold")
	hits := mustMetric(t, f, "shale_coldread_chunk_cache_hits_total")
	misses := mustMetric(t, f, "shale_coldread_chunk_cache_misses_total")
	ratio := mustMetric(t, f, "shale_coldread_chunk_cache_hit_ratio")
	if misses < 1 || ratio != hits/(hits+misses) {
		t.Errorf("chunk cache: %v hits, %v misses, ratio %v", hits, misses, ratio)
	}
	for _, op := range []string{"put", "get"} {
		if v := mustMetric(t, f, "shale_objstore_requests_total", "operation", op); v < 1 {
			t.Errorf("no object-store %s counted", op)
		}
		if v := mustMetric(t, f, "shale_objstore_bytes_total", "operation", op); v <= 0 {
			t.Errorf("no object-store %s bytes counted", op)
		}
		if v := mustMetric(t, f, "shale_objstore_request_duration_seconds", "operation", op); v < 1 {
			t.Errorf("no object-store %s latency observed", op)
		}
	}
	mustMetric(t, f, "go_goroutines")
	mustMetric(t, f, "process_resident_memory_bytes")

	if !strings.Contains(adminGet(t, n, "/debug/pprof/"), "goroutine") {
		t.Errorf("/debug/pprof/ does not list the goroutine profile")
	}
	if !strings.Contains(adminGet(t, n, "/debug/pprof/goroutine?debug=1"), "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine?debug=1 is not a goroutine profile")
	}
}

// TestMetricsReplicationHealth: on a 3-node cluster, stopping a follower
// makes the leader report an under-replicated partition and the controller
// report the offline partitions the follower led alone; restarting it makes
// the leader expand the ISR (counted) and both gauges return to 0.
func TestMetricsReplicationHealth(t *testing.T) {
	dir := t.TempDir()
	session := testnode.WithSession(2 * time.Second)
	lag := func(c *config.Broker) { c.ReplicaLagTimeMax = 2 * time.Second }
	nodes, srv := testnode.StartCluster(t, dir, 3, session, lag)
	ctx := ctxT(t, 50*time.Second)
	adm := kadm.NewClient(newClient(t, nodes[0].KafkaAddr()))
	waitFor(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "urp"); err != nil || r.Err != nil {
		t.Fatalf("create urp: %v %v", err, r.Err)
	}
	if r, err := adm.CreateTopic(ctx, 6, 1, nil, "solo"); err != nil || r.Err != nil {
		t.Fatalf("create solo: %v %v", err, r.Err)
	}
	prod := newClient(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic("urp"), kgo.RecordDeliveryTimeout(30*time.Second))
	if err := prod.ProduceSync(ctx, makeRecords("urp", 20, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var m kadm.Metadata
	waitFor(t, 20*time.Second, "leaders for every partition", func() bool {
		var err error
		m, err = adm.Metadata(ctx, "urp", "solo")
		if err != nil || m.Controller < 1 || m.Topics["urp"].Partitions[0].Leader < 1 {
			return false
		}
		for _, p := range m.Topics["solo"].Partitions {
			if p.Leader < 1 {
				return false
			}
		}
		return true
	})
	leaderID, ctrlID := m.Topics["urp"].Partitions[0].Leader, m.Controller
	victim := int32(0)
	for id := int32(1); id <= 3; id++ {
		if id != leaderID && id != ctrlID {
			victim = id
			break
		}
	}
	wantOffline := 0
	for _, p := range m.Topics["solo"].Partitions {
		if p.Leader == victim {
			wantOffline++
		}
	}
	if wantOffline == 0 {
		t.Fatalf("no partition of solo on node %d: %+v", victim, m.Topics["solo"].Partitions)
	}
	leader, ctrl := nodes[leaderID-1], nodes[ctrlID-1]
	if v := mustMetric(t, scrapeMetrics(t, ctrl), "kafka_controller_kafkacontroller_active_controller_count"); v != 1 {
		t.Fatalf("controller %d reports active_controller_count %v", ctrlID, v)
	}
	if v := mustMetric(t, scrapeMetrics(t, nodes[victim-1]), "kafka_controller_kafkacontroller_active_controller_count"); v != 0 {
		t.Fatalf("node %d, not the controller, reports active_controller_count %v", victim, v)
	}
	expandsBefore := mustMetric(t, scrapeMetrics(t, leader), "kafka_server_replicamanager_isr_expands_total")

	if err := nodes[victim-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "under-replicated partition on the leader", func() bool {
		return mustMetric(t, scrapeMetrics(t, leader), "kafka_server_replicamanager_under_replicated_partitions") == 1
	})
	waitFor(t, 20*time.Second, "offline partitions on the controller", func() bool {
		return mustMetric(t, scrapeMetrics(t, ctrl), "kafka_controller_kafkacontroller_offline_partitions_count") == float64(wantOffline)
	})

	testnode.Start(t, filepath.Join(dir, "node", string(rune('a'+victim-1))),
		testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(victim), session, lag)
	waitFor(t, 30*time.Second, "ISR expanded and no partition under-replicated or offline", func() bool {
		lf, cf := scrapeMetrics(t, leader), scrapeMetrics(t, ctrl)
		return mustMetric(t, lf, "kafka_server_replicamanager_under_replicated_partitions") == 0 &&
			mustMetric(t, lf, "kafka_server_replicamanager_isr_expands_total") > expandsBefore &&
			mustMetric(t, cf, "kafka_controller_kafkacontroller_offline_partitions_count") == 0
	})
}
