package broker_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// A leader counts the bytes its followers fetch apart from its consumers'
// (Kafka's ReplicationBytesOutPerSec beside BytesOutPerSec).
func TestReplicationBytesOutApartFromConsumers(t *testing.T) {
	leader, _ := startRF2Produced(t, 200)
	// acks=all: the follower has fetched every byte before the acks.
	f := testnode.Scrape(t, leader)
	in := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_in_total", "topic", "rep")
	if rep := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_replication_bytes_out_total", "topic", "rep"); rep < in {
		t.Fatalf("replication bytes out %v, below the %v bytes in the follower acknowledged", rep, in)
	}
	if out, ok := testnode.MetricValue(f, "kafka_server_brokertopicmetrics_bytes_out_total", "topic", "rep"); ok && out != 0 {
		t.Fatalf("bytes out %v before any consumer fetched", out)
	}
	if got := testnode.ConsumeAll(t, leader.KafkaAddr(), "rep", 200); len(got) != 200 {
		t.Fatalf("consumed %d", len(got))
	}
	f = testnode.Scrape(t, leader)
	if out := testnode.MustMetric(t, f, "kafka_server_brokertopicmetrics_bytes_out_total", "topic", "rep"); out < in/2 {
		t.Fatalf("bytes out %v after consuming %v bytes in", out, in)
	}
}

// startRF2Produced starts 2 nodes on one NATS server, creates the topic
// "rep" with one partition on both, produces records acks=all (so the
// follower has fetched them all), and returns the partition's leader and
// follower.
func startRF2Produced(t *testing.T, records int) (leader, follower *broker.Node) {
	t.Helper()
	root := t.TempDir()
	srv := testnode.StartNATS(t, root)
	n1 := testnode.Start(t, filepath.Join(root, "a"), testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(1))
	n2 := testnode.Start(t, filepath.Join(root, "b"), testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(2))
	ctx := proctest.Context(t, 60*time.Second)
	adm := kadm.NewClient(testnode.Client(t, n1.KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "rep"); err != nil {
		t.Fatal(err)
	}
	prod := testnode.Client(t, n1.KafkaAddr(), kgo.DefaultProduceTopic("rep"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, testnode.Records("rep", records, "r")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m, err := adm.Metadata(ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	if m.Topics["rep"].Partitions[0].Leader == 2 {
		return n2, n1
	}
	return n1, n2
}
