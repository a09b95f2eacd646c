package broker_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestConsumerLagSeries: a node samples the lag of the groups it
// coordinates and exports it as kafka_exporter's series, with the age of
// the oldest unconsumed record, and serves the sample and each group's
// recent totals on /v1/groups/lag. Records are produced an hour old, so
// the time lag of a lagging partition is at least that.
func TestConsumerLagSeries(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.ConsumerLagSampleInterval = 200 * time.Millisecond })
	ctx := proctest.Context(t, 90*time.Second)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	const topic = "lagged"
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range 30 {
		p := int32(0)
		if i >= 20 {
			p = 1
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%d", i), Timestamp: old.Add(time.Duration(i) * time.Second)})
	}
	produced := time.Now()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commitAs := func(g string, p0, p1 int64) {
		t.Helper()
		var offs kadm.Offsets
		offs.AddOffset(topic, 0, p0, -1)
		offs.AddOffset(topic, 1, p1, -1)
		if r, err := adm.CommitOffsets(ctx, g, offs); err != nil || r.Error() != nil {
			t.Fatalf("commit: %v %v", err, r.Error())
		}
	}
	commit := func(p0, p1 int64) { commitAs("lagging", p0, p1) }
	commit(5, 10) // partition 0: 15 records behind, the oldest record 5's; partition 1 caught up
	// A second group on the same partitions from further back: each group's
	// time lag is its own oldest record's (the sampler fetches both).
	commitAs("behind", 0, 0)

	group := []string{"consumergroup", "lagging", "topic", topic}
	proctest.Eventually(t, 30*time.Second, "kafka_consumergroup_lag of the group", func() bool {
		v, ok := testnode.MetricValue(testnode.Scrape(t, n), "kafka_consumergroup_lag_sum", group...)
		return ok && v == 15
	})
	f := testnode.Scrape(t, n)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_consumergroup_lag", append(group, "partition", "0"), 15},
		{"kafka_consumergroup_lag", append(group, "partition", "1"), 0},
		{"kafka_consumergroup_current_offset", append(group, "partition", "0"), 5},
		{"kafka_consumergroup_current_offset_sum", group, 15},
		{"kafka_consumergroup_members", []string{"consumergroup", "lagging"}, 0},
		{"shale_consumergroup_lag_seconds", append(group, "partition", "1"), 0},
	} {
		if got := testnode.MustMetric(t, f, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Record 5, the oldest not consumed, was stamped an hour less 5 s
	// before the produce; it was sampled after the produce and before now.
	stamp := old.Add(5 * time.Second)
	lo, hi := produced.Sub(stamp).Seconds(), time.Since(stamp).Seconds()
	if got := testnode.MustMetric(t, f, "shale_consumergroup_lag_seconds", append(group, "partition", "0")...); got < lo || got > hi {
		t.Errorf("time lag of partition 0 = %.1f s, want between %.1f and %.1f", got, lo, hi)
	}
	if got := testnode.MustMetric(t, f, "shale_consumergroup_max_lag_seconds", "consumergroup", "lagging"); got < lo {
		t.Errorf("max time lag %.1f s", got)
	}
	behind := []string{"consumergroup", "behind", "topic", topic}
	if got := testnode.MustMetric(t, f, "kafka_consumergroup_lag_sum", behind...); got != 30 {
		t.Errorf("lag of the second group = %v, want 30", got)
	}
	for p, rec := range map[string]int{"0": 0, "1": 20} {
		stamp := old.Add(time.Duration(rec) * time.Second)
		lo, hi := produced.Sub(stamp).Seconds(), time.Since(stamp).Seconds()
		if got := testnode.MustMetric(t, f, "shale_consumergroup_lag_seconds", append(behind, "partition", p)...); got < lo || got > hi {
			t.Errorf("second group's time lag of partition %s = %.1f s, want between %.1f and %.1f (record %d's)", p, got, lo, hi, rec)
		}
	}

	commit(20, 10) // caught up
	proctest.Eventually(t, 30*time.Second, "the lag to fall to 0", func() bool {
		v, ok := testnode.MetricValue(testnode.Scrape(t, n), "kafka_consumergroup_lag_sum", group...)
		return ok && v == 0
	})
	var lag adminapi.ConsumerLag
	if err := json.Unmarshal([]byte(testnode.AdminGet(t, n, adminapi.ConsumerLagPath+"?group=lagging")), &lag); err != nil {
		t.Fatal(err)
	}
	if lag.NodeID != 0 || len(lag.Groups) != 1 || lag.Groups[0].Group != "lagging" || lag.Groups[0].Total() != 0 {
		t.Fatalf("/v1/groups/lag: %+v", lag)
	}
	h := lag.Groups[0].History
	if len(h) < 2 || h[len(h)-1].Lag != 0 || !slicesContainLag(h, 15) {
		t.Fatalf("history %+v: want the 15 of before and the 0 of now", h)
	}
}

func slicesContainLag(h []adminapi.LagPoint, v int64) bool {
	for _, p := range h {
		if p.Lag == v {
			return true
		}
	}
	return false
}
