package compat

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestFollowerFetching: KIP-392 on three nodes, each in its own rack, with
// replica.selector.class RackAwareReplicaSelector. A franz-go consumer
// with Rack, then a librdkafka consumer with client.rack, each in the rack
// of a follower of a replicated partition, read every record; the node
// metrics show the follower returned the record bytes and the leader none
// (its answer to their first fetch names the follower, with no records).
// Before, PreferredReadReplica was always -1 and a follower answered a
// consumer NOT_LEADER_OR_FOLLOWER: the leader served every byte.
func TestFollowerFetching(t *testing.T) {
	const topic, n = "kip392", 200
	dir := t.TempDir()
	srv := testnode.StartNATS(t, dir)
	racks := []string{"zone-a", "zone-b", "zone-c"}
	nodes := make([]*broker.Node, len(racks))
	for i, rack := range racks {
		nodes[i] = testnode.Start(t, filepath.Join(dir, "node", rack), testnode.WithNATS(srv.ClientURL()),
			testnode.WithNodeID(int32(i+1)), testnode.WithRack(rack), testnode.WithRackAwareSelector())
	}
	ctx := proctest.Context(t, 180*time.Second)
	addr := nodes[0].KafkaAddr()
	cl := testnode.Client(t, addr, kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)
	proctest.Eventually(t, 30*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var leader int32
	proctest.Eventually(t, 30*time.Second, "a leader with 3 in-sync replicas", func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil || len(m.Topics[topic].Partitions) != 1 {
			return false
		}
		p := m.Topics[topic].Partitions[0]
		leader = p.Leader
		return leader > 0 && len(p.ISR) == 3
	})
	follower := leader%3 + 1
	for i := range n {
		r := &kgo.Record{Value: fmt.Appendf(nil, "record-%03d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	// The leader must know the follower holds everything (its fetches in
	// this term), and the follower must have the high watermark, before a
	// consumer comes.
	proctest.Eventually(t, 30*time.Second, "the follower caught up, as both sides see it", func() bool {
		lrep, err := nodes[leader-1].Replicas().Leader(topic, 0)
		if err != nil {
			return false
		}
		views, err := lrep.InSyncFollowers()
		if err != nil {
			return false
		}
		frep, ok := nodes[follower-1].Replicas().Local(topic, 0)
		if !ok || frep.HighWatermark() != n {
			return false
		}
		for _, v := range views {
			if v.ID == follower && v.LogEnd == n && v.LogStart == 0 {
				return true
			}
		}
		return false
	})
	out := func(id int32) float64 {
		v, _ := testnode.MetricValue(testnode.Scrape(t, nodes[id-1]), "kafka_server_brokertopicmetrics_bytes_out_total", "topic", topic)
		return v
	}

	// franz-go with Rack.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Rack(racks[follower-1]), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consumed %d of %d records: %v", got, n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("record-%03d", got); string(r.Value) != want {
				t.Fatalf("franz-go record %d is %q, want %q", got, r.Value, want)
			}
			got++
		})
	}
	cons.Close()
	afterFranz := out(follower)
	if afterFranz == 0 || out(leader) != 0 {
		t.Fatalf("franz-go with rack %s: bytes out on the follower %d = %v, on the leader %d = %v; want the follower alone",
			racks[follower-1], follower, afterFranz, leader, out(leader))
	}

	// librdkafka with client.rack.
	c, err := kafka.NewConsumer(with(confluentConfig(addr), "group.id", "kip392-rdkafka", "client.rack", racks[follower-1],
		"auto.offset.reset", "earliest", "enable.auto.commit", false, "fetch.wait.max.ms", 200))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tp := topic
	if err := c.Assign([]kafka.TopicPartition{{Topic: &tp, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	for got = 0; got < n; {
		if ctx.Err() != nil {
			t.Fatalf("librdkafka consumed %d of %d records: %v", got, n, ctx.Err())
		}
		switch ev := c.Poll(200).(type) {
		case *kafka.Message:
			if want := fmt.Sprintf("record-%03d", got); string(ev.Value) != want {
				t.Fatalf("librdkafka record %d is %q, want %q", got, ev.Value, want)
			}
			got++
		case kafka.Error:
			t.Logf("librdkafka: %v", ev)
		}
	}
	if f, l := out(follower), out(leader); f < 2*afterFranz || l != 0 {
		t.Fatalf("librdkafka with client.rack %s: bytes out on the follower %d = %v (%v after franz-go), on the leader %d = %v; want the follower alone",
			racks[follower-1], follower, f, afterFranz, leader, l)
	}
	third := 6 - leader - follower
	if o := out(third); o != 0 {
		t.Fatalf("node %d, in neither consumer's rack, returned %v bytes", third, o)
	}
}
