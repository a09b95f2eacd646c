package clustertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// BenchmarkISRRejoin is issue 23's restart figure on three nodes, for
// `make bench`: three shale processes on one NATS server (in this process,
// as an external NATS) hold one RF=3 topic (min.insync.replicas=2) of 8,
// then 1,000 partitions, one record in each. Node 3 is killed with
// SIGKILL; reported: the time until no partition names it leader
// (led-elsewhere-ms), and after its restart the time until it is back in
// the ISR of every partition (rejoin-ms), with what its recovery read
// (recovery-kb) and its RssFile then (rssfile-mb). Asserts nothing about
// time; every phase must end within generous bounds. Each phase ends at the
// first poll (every 20 ms, Metadata from node 1 or 2) that sees it done.
//
// SHALE_BENCH_REJOIN_PARTITIONS (comma separated) replaces the partition
// counts. One iteration is the whole workload: run it with -benchtime 1x.
func BenchmarkISRRejoin(b *testing.B) {
	for _, parts := range partitionCounts(b, "SHALE_BENCH_REJOIN_PARTITIONS", 8, 1000) {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				isrRejoin(b, parts)
			}
		})
	}
}

func isrRejoin(b *testing.B, parts int32) {
	const topic = "rejoin"
	c := proctest.StartCluster(b, shaleBin, []int32{1, 2, 3}, proctest.ClusterName(fmt.Sprintf("rejoin %d", parts)))
	ctx := proctest.Context(b, 15*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka(), c.Node(2).Kafka()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(5*time.Minute),
		// kadm's Metadata answers from the client's cache while it is
		// younger than MetadataMinAge (default 5 s): the figures sat on
		// multiples of 5 s. At 20 ms, the polls below see each change
		// within one poll.
		kgo.MetadataMinAge(20*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Minute)) // CreateTopics of many partitions on a loaded machine
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	two := "2"
	resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &two}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("creating %d partitions: %v", parts, err)
	}
	recs := make([]*kgo.Record, parts)
	for p := range parts {
		recs[p] = &kgo.Record{Topic: topic, Partition: p, Value: []byte("before")}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatalf("produce: %v", err)
	}
	// every reports whether each partition's metadata satisfies ok.
	every := func(ok func(kadm.PartitionDetail) bool) bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		td, found := md.Topics[topic]
		if !found || td.Err != nil || int32(len(td.Partitions)) != parts {
			return false
		}
		for _, pd := range td.Partitions {
			if pd.Err != nil || !ok(pd) {
				return false
			}
		}
		return true
	}
	if err := proctest.WaitFor(5*time.Minute, func() bool {
		return every(func(pd kadm.PartitionDetail) bool { return len(pd.ISR) == 3 })
	}); err != nil {
		b.Fatalf("full ISRs before the kill: %v", err)
	}
	n := c.Node(3)
	start := time.Now()
	n.Kill()
	if err := proctest.WaitFor(5*time.Minute, func() bool {
		return every(func(pd kadm.PartitionDetail) bool { return pd.Leader >= 0 && pd.Leader != 3 })
	}); err != nil {
		b.Fatalf("leaders elsewhere: %v", err)
	}
	ledElsewhere := time.Since(start)
	start = time.Now()
	n.Start()
	if err := proctest.WaitFor(10*time.Minute, func() bool {
		return every(func(pd kadm.PartitionDetail) bool { return slices.Contains(pd.ISR, 3) })
	}); err != nil {
		b.Fatalf("node 3 back in every ISR: %v", err)
	}
	rejoin := time.Since(start)
	b.ReportMetric(float64(ledElsewhere.Milliseconds()), "led-elsewhere-ms")
	b.ReportMetric(float64(rejoin.Milliseconds()), "rejoin-ms")
	b.ReportMetric(n.Metrics()["shale_log_recovery_bytes_total"]/(1<<10), "recovery-kb")
	b.ReportMetric(float64(n.RSSFile())/(1<<20), "rssfile-mb")
	c.CheckNoPanic()
}
