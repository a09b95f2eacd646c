package broker_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestMetricsAfterTraffic produces to a plain and a tiered topic, waits
// for segments to be copied to the bucket and deleted locally, consumes
// everything (the tiered topic from the cold tier), and checks that the key
// series moved and that the admin listener serves pprof (admin_pprof_enable).
func TestMetricsAfterTraffic(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), testnode.WithTiering(100*time.Millisecond),
		func(c *config.Broker) { c.AdminPprofEnable = true })
	ctx := proctest.Context(t, 150*time.Second)
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	tiered := map[string]*string{"segment.bytes": new("16384"), "local.retention.bytes": new("32768"),
		"remote.storage.enable": new("true")}
	for topic, cfg := range map[string]map[string]*string{"hot": nil, "cold": tiered} {
		if r, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	before := testnode.Scrape(t, n)
	if v := testnode.MustMetric(t, before, "kafka_controller_kafkacontroller_active_controller_count"); v != 1 {
		t.Fatalf("active controller %v on the only node", v)
	}

	const hot, cold = 50, 1000
	prod := testnode.Client(t, n.KafkaAddr(), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(8<<10),
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
	proctest.Eventually(t, 90*time.Second, "cold segments tiered and deleted locally", func() bool {
		rep := testnode.Replica(n, "cold", 0)
		return rep != nil && rep.Log().LogStartOffset() > 0 && n.Tiering().Stats().SegmentsUploaded > 0
	})
	if got := testnode.ConsumeAll(t, n.KafkaAddr(), "hot", hot); len(got) != hot {
		t.Fatalf("consumed %d hot records, want %d", len(got), hot)
	}
	if got := testnode.ConsumeAll(t, n.KafkaAddr(), "cold", cold); len(got) != cold {
		t.Fatalf("consumed %d cold records, want %d", len(got), cold)
	}

	f := testnode.Scrape(t, n)
	if v := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_messages_in_total", "topic", "hot"); v != hot {
		t.Errorf("messages in for hot: %v, want %d", v, hot)
	}
	if v := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_messages_in_total", "topic", "cold"); v != cold {
		t.Errorf("messages in for cold: %v, want %d", v, cold)
	}
	if v := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_in_total", "topic", "cold"); v < cold*200 {
		t.Errorf("bytes in for cold: %v, want at least %d", v, cold*200)
	}
	for _, topic := range []string{"hot", "cold"} {
		in := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_in_total", "topic", topic)
		out := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_out_total", "topic", topic)
		if out < in/2 {
			t.Errorf("bytes out for %s: %v after consuming everything of %v bytes in", topic, out, in)
		}
	}
	for _, api := range []string{"Produce", "FetchConsumer", "Metadata", "CreateTopics", "ApiVersions"} {
		if v := testnode.MustMetric(t, f, "kafka_network_requestmetrics_total_time_seconds", "request", api); v < 1 {
			t.Errorf("no %s request in the latency histogram", api)
		}
		if v := testnode.MustMetric(t, f, "kafka_network_requestmetrics_requests_total", "request", api); v < 1 {
			t.Errorf("no %s request counted", api)
		}
	}
	if v := testnode.MustMetric(t, f, "kafka_server_replicamanager_under_replicated_partitions"); v != 0 {
		t.Errorf("under-replicated partitions %v with replication factor 1", v)
	}
	if v := testnode.MustMetric(t, f, "kafka_controller_kafkacontroller_offline_partitions_count"); v != 0 {
		t.Errorf("offline partitions %v on a live single node", v)
	}
	for _, name := range []string{"kafka_server_brokertopicmetrics_remote_copy_requests_total",
		"kafka_server_brokertopicmetrics_remote_copy_bytes_total", "kafka_server_brokertopicmetrics_remote_fetch_bytes_total",
		"shale_coldread_get_requests_total", "shale_tiering_passes_total"} {
		if v := testnode.MustMetric(t, f, name); v <= 0 {
			t.Errorf("%s = %v after tiering and a cold read", name, v)
		}
	}
	if v := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_remote_log_size_bytes", "topic", "cold"); v <= 0 {
		t.Errorf("remote log size of cold: %v", v)
	}
	if v := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_remote_log_size_bytes", "topic", "hot"); v != 0 {
		t.Errorf("remote log size of the untiered topic: %v", v)
	}
	testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_remote_copy_lag_segments", "topic", "cold")
	testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_remote_copy_lag_bytes", "topic", "cold")
	hits := testnode.MustMetric(t, f, "shale_coldread_chunk_cache_hits_total")
	misses := testnode.MustMetric(t, f, "shale_coldread_chunk_cache_misses_total")
	ratio := testnode.MustMetric(t, f, "shale_coldread_chunk_cache_hit_ratio")
	if misses < 1 || ratio != hits/(hits+misses) {
		t.Errorf("chunk cache: %v hits, %v misses, ratio %v", hits, misses, ratio)
	}
	for _, op := range []string{"put", "get"} {
		if v := testnode.MustMetric(t, f, "shale_objstore_requests_total", "operation", op); v < 1 {
			t.Errorf("no object-store %s counted", op)
		}
		if v := testnode.MustMetric(t, f, "shale_objstore_bytes_total", "operation", op); v <= 0 {
			t.Errorf("no object-store %s bytes counted", op)
		}
		if v := testnode.MustMetric(t, f, "shale_objstore_request_duration_seconds", "operation", op); v < 1 {
			t.Errorf("no object-store %s latency observed", op)
		}
	}
	testnode.MustMetric(t, f, "go_goroutines")
	testnode.MustMetric(t, f, "process_resident_memory_bytes")

	if !strings.Contains(testnode.AdminGet(t, n, "/debug/pprof/"), "goroutine") {
		t.Errorf("/debug/pprof/ does not list the goroutine profile")
	}
	if !strings.Contains(testnode.AdminGet(t, n, "/debug/pprof/goroutine?debug=1"), "goroutine profile") {
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
	ctx := proctest.Context(t, 50*time.Second)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "urp"); err != nil || r.Err != nil {
		t.Fatalf("create urp: %v %v", err, r.Err)
	}
	if r, err := adm.CreateTopic(ctx, 6, 1, nil, "solo"); err != nil || r.Err != nil {
		t.Fatalf("create solo: %v %v", err, r.Err)
	}
	prod := testnode.Client(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic("urp"), kgo.RecordDeliveryTimeout(30*time.Second))
	if err := prod.ProduceSync(ctx, testnode.Records("urp", 20, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var m kadm.Metadata
	proctest.Eventually(t, 20*time.Second, "leaders for every partition", func() bool {
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
	if v := testnode.MustMetric(t, testnode.Scrape(t, ctrl), "kafka_controller_kafkacontroller_active_controller_count"); v != 1 {
		t.Fatalf("controller %d reports active_controller_count %v", ctrlID, v)
	}
	if v := testnode.MustMetric(t, testnode.Scrape(t, nodes[victim-1]), "kafka_controller_kafkacontroller_active_controller_count"); v != 0 {
		t.Fatalf("node %d, not the controller, reports active_controller_count %v", victim, v)
	}
	expandsBefore := testnode.MustMetric(t, testnode.Scrape(t, leader), "kafka_server_replicamanager_isr_expands_total")

	if err := nodes[victim-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(t, 20*time.Second, "under-replicated partition on the leader", func() bool {
		return testnode.MustMetric(t, testnode.Scrape(t, leader), "kafka_server_replicamanager_under_replicated_partitions") == 1
	})
	proctest.Eventually(t, 20*time.Second, "offline partitions on the controller", func() bool {
		return testnode.MustMetric(t, testnode.Scrape(t, ctrl), "kafka_controller_kafkacontroller_offline_partitions_count") == float64(wantOffline)
	})

	testnode.Start(t, filepath.Join(dir, "node", string(rune('a'+victim-1))),
		testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(victim), session, lag)
	proctest.Eventually(t, 30*time.Second, "ISR expanded and no partition under-replicated or offline", func() bool {
		lf, cf := testnode.Scrape(t, leader), testnode.Scrape(t, ctrl)
		return testnode.MustMetric(t, lf, "kafka_server_replicamanager_under_replicated_partitions") == 0 &&
			testnode.MustMetric(t, lf, "kafka_server_replicamanager_isr_expands_total") > expandsBefore &&
			testnode.MustMetric(t, cf, "kafka_controller_kafkacontroller_offline_partitions_count") == 0
	})
}
