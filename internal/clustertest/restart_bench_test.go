package clustertest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// BenchmarkUncleanRestart is issue 23's restart figure, for `make bench`:
// one node (embedded NATS) holding one topic of 8, then 1,000 partitions,
// one record in each, is killed with SIGKILL and restarted on its data
// dir; the time from the restart until a produce to every partition is
// acknowledged is the figure (ready-ms), the 8-partition run its peer.
// Also reported: the time until every partition was opened and recovered
// (opened-ms: shale_log_recovery_segments_total reached the partitions,
// polled every 20 ms), the node's file-backed resident memory then (rssfile-mb)
// and what recovery read (recovery-kb, shale_log_recovery_bytes_total).
// SHALE_BENCH_SEGMENT_INDEX_BYTES sets the topic's segment.index.bytes
// (default: the broker's, 10 MiB). Asserts nothing about time.
//
// One iteration is the whole workload: run it with -benchtime 1x.
func BenchmarkUncleanRestart(b *testing.B) {
	for _, parts := range []int32{8, 1000} {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				opened, ready, rss, read := uncleanRestart(b, parts)
				b.ReportMetric(float64(opened.Milliseconds()), "opened-ms")
				b.ReportMetric(float64(ready.Milliseconds()), "ready-ms")
				b.ReportMetric(float64(rss)/(1<<20), "rssfile-mb")
				b.ReportMetric(read/(1<<10), "recovery-kb")
			}
		})
	}
}

func uncleanRestart(b *testing.B, parts int32) (opened, ready time.Duration, rssFile int64, recoveryBytes float64) {
	const topic = "restart"
	n := proctest.Serve(b, shaleBin, b.TempDir(), []string{"--nats-listen", "127.0.0.1:-1"},
		proctest.Name(fmt.Sprintf("restart bench %d", parts)))
	n.Start()
	n.WaitReady()
	ctx := proctest.Context(b, 10*time.Minute)
	produceAll := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Kafka()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(5*time.Minute))
		if err != nil {
			return err
		}
		defer cl.Close()
		recs := make([]*kgo.Record, parts)
		for p := range parts {
			recs[p] = &kgo.Record{Topic: topic, Partition: p, Value: []byte("after")}
		}
		return cl.ProduceSync(ctx, recs...).FirstErr()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Kafka()))
	if err != nil {
		b.Fatal(err)
	}
	var configs map[string]*string
	if v := os.Getenv("SHALE_BENCH_SEGMENT_INDEX_BYTES"); v != "" {
		if _, err := strconv.Atoi(v); err != nil {
			b.Fatalf("SHALE_BENCH_SEGMENT_INDEX_BYTES %q", v)
		}
		configs = map[string]*string{"segment.index.bytes": &v}
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, configs, topic)
	cl.Close()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("creating %d partitions: %v", parts, err)
	}
	if err := produceAll(); err != nil {
		b.Fatalf("produce before the kill: %v", err)
	}
	n.Kill()
	start := time.Now()
	n.Start()
	n.WaitReady()
	if err := proctest.WaitFor(5*time.Minute, func() bool {
		return n.Metrics()["shale_log_recovery_segments_total"] >= float64(parts)
	}); err != nil {
		b.Fatalf("%d partitions recovered: %v", parts, err)
	}
	opened = time.Since(start)
	if err := produceAll(); err != nil {
		b.Fatalf("produce after the restart: %v\n%s", err, n.Tail())
	}
	ready = time.Since(start)
	rssFile, recoveryBytes = n.RSSFile(), n.Metrics()["shale_log_recovery_bytes_total"]
	n.CheckNoPanic()
	n.Kill()
	return opened, ready, rssFile, recoveryBytes
}
