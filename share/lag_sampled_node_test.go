package share_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestShareGroupLagSampled: the node's lag sampler takes the share groups
// it coordinates too: an empty share group whose start offset is moved to
// 3 on a partition of 10 records an hour old shows in /v1/groups/lag as
// type share with lag 7 and the time lag of record 3 (at least an hour),
// with its recent totals, and the console's group page has them as its
// lag over time; it is not among the kafka_consumergroup_* series.
// Before, the sampler left share groups out and the console had no chart
// for them.
func TestShareGroupLagSampled(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastShareGroups, func(c *config.Broker) { c.ConsumerLagSampleInterval = 200 * time.Millisecond })
	ctx := proctest.Context(t, 90*time.Second)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	const topic, grp = "share-sampled", "share-sampled-group"
	testnode.CreateTopic(t, adm, topic, 1)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i), Timestamp: old.Add(time.Duration(i) * time.Second)})
	}
	produced := time.Now()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, epoch := range []int32{0, -1} { // join and leave: the group exists, empty
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = grp, "sampled-member", epoch
		if epoch == 0 {
			hb.SubscribedTopicNames = []string{topic}
		}
		if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
			t.Fatalf("ShareGroupHeartbeat at epoch %d: %v %+v", epoch, err, r)
		}
	}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = grp
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	ap.Partition, ap.StartOffset = 0, 3
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	if r, err := alter.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterShareGroupOffsets: %v %+v", err, r)
	}

	var lag adminapi.ConsumerLag
	var last string
	proctest.Eventually(t, 30*time.Second, "the share group's lag sampled twice", func() bool {
		last = testnode.AdminGet(t, n, adminapi.ConsumerLagPath+"?group="+grp)
		if err := json.Unmarshal([]byte(last), &lag); err != nil {
			t.Fatal(err)
		}
		return len(lag.Groups) == 1 && lag.Groups[0].Total() == 7 && len(lag.Groups[0].History) >= 2
	})
	g := lag.Groups[0]
	if g.Type != "share" || g.Group != grp || len(g.Partitions) != 1 || g.Partitions[0].Committed != 3 || g.Partitions[0].Lag != 7 {
		t.Fatalf("/v1/groups/lag: %s", last)
	}
	stamp := old.Add(3 * time.Second) // record 3's: the oldest not done
	if tl := g.Partitions[0].TimeLagSeconds; tl < produced.Sub(stamp).Seconds() || tl > time.Since(stamp).Seconds() {
		t.Errorf("time lag %.1f s, want record 3's age (%.1f s)", tl, produced.Sub(stamp).Seconds())
	}
	var page adminapi.ConsoleGroupDetail
	if err := json.Unmarshal([]byte(testnode.AdminGet(t, n, adminapi.ConsoleGroupPath+"?group="+grp)), &page); err != nil {
		t.Fatal(err)
	}
	if page.Group.Type != "share" || page.Group.HistoryNode != page.NodeID || len(page.Group.History) == 0 || page.Group.History[len(page.Group.History)-1].Lag != 7 {
		t.Fatalf("console group page: %+v", page.Group)
	}
	if _, ok := testnode.MetricValue(testnode.Scrape(t, n), "kafka_consumergroup_lag_sum", "consumergroup", grp, "topic", topic); ok {
		t.Errorf("the share group is a kafka_consumergroup_lag_sum series")
	}
}
