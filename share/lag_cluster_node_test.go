package share_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestShareGroupLagOfPartitionsLedElsewhere: three nodes, a topic of three
// RF=1 partitions (one led by each node), ten records in each, an empty
// share group whose start offsets are moved to 3 on every partition.
// DescribeShareGroupOffsets, answered by the group's coordinator, gives
// each partition its lag of 7: the coordinator asks the leaders of the
// partitions it does not lead for their ends, as Kafka's group
// coordinator does. Before, two of the three lags were -1 (unknown), which
// kafka-share-groups.sh and the console showed as "-".
func TestShareGroupLagOfPartitionsLedElsewhere(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, fastShareGroups)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.KafkaAddr())
	}
	ctx := proctest.Context(t, 120*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	}); err != nil {
		t.Fatal("3 brokers:", err)
	}
	const topic, grp = "share-lag-3", "share-lag-3-group"
	testnode.CreateTopic(t, adm, topic, 3)
	leaders := map[int32]int32{}
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || td[topic].Err != nil {
			return false
		}
		for p, pd := range td[topic].Partitions {
			leaders[p] = pd.Leader
		}
		return len(leaders) == 3
	}); err != nil {
		t.Fatal("leaders:", err)
	}
	var recs []*kgo.Record
	for p := range int32(3) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "r-%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The group: a member joins and leaves, so that it exists and is empty.
	for _, epoch := range []int32{0, -1} {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = grp, "lag-member", epoch
		if epoch == 0 {
			hb.SubscribedTopicNames = []string{topic}
		}
		if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
			r, err := hb.RequestWith(ctx, cl)
			return err == nil && r.ErrorCode == 0
		}); err != nil {
			t.Fatalf("ShareGroupHeartbeat at epoch %d: %v", epoch, err)
		}
	}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = grp
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	for p := range int32(3) {
		ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		ap.Partition, ap.StartOffset = p, 3
		at.Partitions = append(at.Partitions, ap)
	}
	alter.Topics = append(alter.Topics, at)
	var last string
	if err := proctest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		resp, err := alter.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			last = fmt.Sprintf("%v %v", err, kerr.ErrorForCode(resp.ErrorCode))
			return false
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				last = fmt.Sprintf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("AlterShareGroupOffsets: %v (%s)", err, last)
	}
	if err := proctest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		ps := shareOffsets(t, cl, grp, topic, 3)
		last = fmt.Sprintf("%+v (leaders %v)", ps, leaders)
		if len(ps) != 3 {
			return false
		}
		for _, p := range ps {
			if p.ErrorCode != 0 || p.StartOffset != 3 || p.Lag != 7 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("want start offset 3 and lag 7 on each partition: %s", last)
	}
}
