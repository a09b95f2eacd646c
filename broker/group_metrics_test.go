package broker_test

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestGroupCoordinatorMetrics: after real clients formed a classic group,
// a KIP-848 consumer group, a simple-commit group and a share group, the
// node's /metrics counts them by protocol and state, their committed
// offsets, the commits and rebalances, and per share-partition the
// records a member holds, its in-flight records and its lag.
func TestGroupCoordinatorMetrics(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.ShareAutoOffsetReset = "earliest" })
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	const topic = "gm"
	testnode.CreateTopic(t, adm, topic, 2)
	testnode.ProduceN(t, addr, topic, 20, "r")

	classic := testnode.Client(t, addr, kgo.ConsumerGroup("gm-classic"), kgo.ConsumeTopics(topic), kgo.SessionTimeout(6*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	testnode.PollRecords(t, classic, 20)
	if err := classic.CommitUncommittedOffsets(proctest.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	kip848 := testnode.Client(t, addr, kgo.ConsumerGroup("gm-848"), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	testnode.PollRecords(t, kip848, 20)
	if err := kip848.CommitUncommittedOffsets(proctest.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 1, LeaderEpoch: -1})
	testnode.CommitSimple(t, adm, "gm-simple", os)

	// A share member takes records and acknowledges none: they stay
	// Acquired under its locks (30 s) while the test reads the metrics.
	sh := testnode.Client(t, addr, kgo.ShareGroup("gm-share"), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(300*time.Millisecond))
	held := 0
	ctx := proctest.Context(t, 30*time.Second)
	for held == 0 {
		fs := sh.PollRecords(ctx, 50)
		if ctx.Err() != nil {
			t.Fatal("the share member got no records")
		}
		held += fs.NumRecords()
	}

	// The 848 group reaches Stable once its member acknowledged its
	// assignment; the classic member is Stable since its sync.
	var fams map[string]*dto.MetricFamily
	value := func(name string, labels ...string) float64 {
		v, ok := testnode.MetricValue(fams, name, labels...)
		if !ok {
			return -1
		}
		return v
	}
	const gcm = "kafka_server_group_coordinator_metrics_"
	const gmm = "kafka_coordinator_group_groupmetadatamanager_"
	type series struct {
		name   string
		labels []string
		want   float64
	}
	want := []series{
		{gcm + "group_count", []string{"protocol", "classic"}, 2}, // gm-classic, gm-simple
		{gcm + "group_count", []string{"protocol", "consumer"}, 1},
		{gcm + "group_count", []string{"protocol", "share"}, 1},
		{gcm + "consumer_group_count", []string{"state", "Stable"}, 1},
		{gcm + "share_group_count", []string{"state", "Stable"}, 1},
		{gmm + "num_groups", nil, 2},
		{gmm + "num_groups_stable", nil, 1},
		{gmm + "num_groups_empty", nil, 1},
		{gmm + "num_offsets", nil, 6}, // 2 partitions x 3 groups
		{gcm + "offset_commit_total", nil, 6},
		{gcm + "group_completed_rebalance_total", nil, 1}, // the classic member's one join and sync
		{"shale_share_partition_acquired_records", []string{"group", "gm-share"}, float64(held)},
		{"shale_share_partition_lag", []string{"group", "gm-share"}, 20}, // nothing acknowledged
	}
	got := make([]float64, len(want))
	err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		fams = testnode.Scrape(t, n)
		same := true
		for i, s := range want {
			got[i] = value(s.name, s.labels...)
			same = same && got[i] == s.want
		}
		return same
	})
	if err != nil {
		for i, s := range want {
			if got[i] != s.want {
				t.Errorf("%s%v = %v, want %v", s.name, s.labels, got[i], s.want)
			}
		}
		t.Fatal(err)
	}
	if v := value(gcm + "consumer_group_rebalance_total"); v < 1 {
		t.Errorf("consumer_group_rebalance_total %v, want at least the member's join", v)
	}
	if v := value(gcm + "share_group_rebalance_total"); v < 1 {
		t.Errorf("share_group_rebalance_total %v, want at least the member's join", v)
	}
	if v := value("kafka_server_share_partition_metrics_in_flight_message_count", "group", "gm-share"); v < float64(held) {
		t.Errorf("in-flight records %v, want at least the %d held", v, held)
	}
}
