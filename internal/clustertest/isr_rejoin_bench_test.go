package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
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
// (led-elsewhere-ms), then until an acks=all record to each partition it
// led is acknowledged (served-ms, from the kill), and after its restart the time until it is back in
// the ISR of every partition (rejoin-ms), with what its recovery read
// (recovery-kb) and its RssFile then (rssfile-mb). Asserts nothing about
// time; every phase must end within generous bounds. Each phase ends at the
// first poll (every 20 ms, Metadata from node 1 or 2) that sees it done.
//
// SHALE_BENCH_REJOIN_PARTITIONS (comma separated) replaces the partition
// counts. With SHALE_BENCH_PROFILE_DIR set, nodes 1 and 2 serve pprof and
// their CPU profiles of the first 10 s from the kill are written there
// (rejoin-<partitions>-node-<id>-failover.pprof, with heap profiles before
// the kill and once every partition is served, -heap-start.pprof and
// -heap-end.pprof), with this process's (the
// NATS server's and the client's: rejoin-<partitions>-nats-failover.pprof). One iteration is the whole workload: run it with -benchtime 1x.
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

// rejoinProfile is how long the failover's CPU profiles run, with
// SHALE_BENCH_PROFILE_DIR set.
const rejoinProfile = 10 * time.Second

func isrRejoin(b *testing.B, parts int32) {
	const topic = "rejoin"
	profDir := os.Getenv("SHALE_BENCH_PROFILE_DIR")
	opts := []proctest.ClusterOption{proctest.ClusterName(fmt.Sprintf("rejoin %d", parts))}
	if profDir != "" {
		opts = append(opts, proctest.NodeEnv("SHALE_ADMIN_PPROF_ENABLE=true"))
	}
	c := proctest.StartCluster(b, shaleBin, []int32{1, 2, 3}, opts...)
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
	createRF3(b, ctx, adm, topic, parts)
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
		return err == nil && everyPartition(md, topic, parts, ok)
	}
	if err := proctest.WaitFor(5*time.Minute, func() bool {
		return every(func(pd kadm.PartitionDetail) bool { return len(pd.ISR) == 3 })
	}); err != nil {
		b.Fatalf("full ISRs before the kill: %v", err)
	}
	// The partitions node 3 leads: after the kill, each gets one acks=all
	// record, and served-ms is when the last is acknowledged.
	var led3 []int32
	if md, err := adm.Metadata(ctx, topic); err == nil {
		for _, pd := range md.Topics[topic].Partitions {
			if pd.Leader == 3 {
				led3 = append(led3, pd.Partition)
			}
		}
	}
	if len(led3) == 0 {
		b.Fatal("node 3 leads no partition")
	}
	n := c.Node(3)
	var profs sync.WaitGroup
	if profDir != "" {
		// The surviving nodes' CPU from just before the kill, through the
		// elections and their application.
		for _, id := range []int32{1, 2} {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.Node(id).Admin(), int(rejoinProfile.Seconds()))
			path := filepath.Join(profDir, fmt.Sprintf("rejoin-%d-node-%d-failover.pprof", parts, id))
			profs.Go(func() { saveProfile(b, url, path) })
			// And 4 s of its execution trace: where the elections and
			// their application wait (`go tool trace`).
			turl := fmt.Sprintf("http://%s/debug/pprof/trace?seconds=4", c.Node(id).Admin())
			tpath := filepath.Join(profDir, fmt.Sprintf("rejoin-%d-node-%d-failover.trace", parts, id))
			profs.Go(func() { saveProfile(b, turl, tpath) })
		}
		// This process runs the NATS server.
		f, err := os.Create(filepath.Join(profDir, fmt.Sprintf("rejoin-%d-nats-failover.pprof", parts)))
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Logf("profile of this process: %v", err) // go test -cpuprofile holds it
			f.Close()
		} else {
			profs.Go(func() {
				time.Sleep(rejoinProfile)
				pprof.StopCPUProfile()
				f.Close()
			})
		}
		time.Sleep(100 * time.Millisecond) // the nodes' profiles have started
		// What the failover allocates (the collector's work in it): the
		// surviving nodes' heap profiles before the kill and once every
		// partition is served, compared with -base.
		saveHeaps(b, c, profDir, parts, "start")
	}
	start := time.Now()
	n.Kill()
	if err := proctest.WaitFor(5*time.Minute, func() bool {
		return every(func(pd kadm.PartitionDetail) bool { return pd.Leader >= 0 && pd.Leader != 3 })
	}); err != nil {
		b.Fatalf("leaders elsewhere: %v", err)
	}
	ledElsewhere := time.Since(start)
	recs = recs[:0]
	for _, p := range led3 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("after")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatalf("produce to the killed leader's %d partitions: %v", len(led3), err)
	}
	served := time.Since(start)
	if profDir != "" {
		saveHeaps(b, c, profDir, parts, "end")
	}
	profs.Wait()
	logElections(b, c, start)
	start = time.Now()
	n.Start()
	if err := proctest.WaitFor(10*time.Minute, func() bool {
		return every(func(pd kadm.PartitionDetail) bool { return slices.Contains(pd.ISR, 3) })
	}); err != nil {
		b.Fatalf("node 3 back in every ISR: %v", err)
	}
	rejoin := time.Since(start)
	b.ReportMetric(float64(ledElsewhere.Milliseconds()), "led-elsewhere-ms")
	b.ReportMetric(float64(served.Milliseconds()), "served-ms")
	b.ReportMetric(float64(rejoin.Milliseconds()), "rejoin-ms")
	b.ReportMetric(n.Metrics()["shale_log_recovery_bytes_total"]/(1<<10), "recovery-kb")
	b.ReportMetric(float64(n.RSSFile())/(1<<20), "rssfile-mb")
	c.CheckNoPanic()
}

// logElections logs when the controller's elections after the kill at
// killed began and ended, as its log's timestamps say, and how many there
// were: what of led-elsewhere-ms was electing.
func logElections(b *testing.B, c *proctest.Cluster, killed time.Time) {
	for _, id := range []int32{1, 2} {
		var first, last time.Time
		n := 0
		per := map[int]int{} // elections per 250 ms from the kill
		for _, kv := range c.Node(id).LogLines("elected leader") {
			at, err := time.Parse(time.RFC3339Nano, kv["time"])
			if err != nil || at.Before(killed) {
				continue
			}
			if n == 0 {
				first = at
			}
			last, n = at, n+1
			per[int(at.Sub(killed)/(250*time.Millisecond))]++
		}
		if n > 0 {
			var buckets []string
			for i := range int(last.Sub(killed)/(250*time.Millisecond)) + 1 {
				buckets = append(buckets, fmt.Sprint(per[i]))
			}
			b.Logf("node %d elected %d leaders from %v to %v after the kill; per 250 ms: %s", id, n, first.Sub(killed), last.Sub(killed), strings.Join(buckets, " "))
		}
	}
}

// saveHeaps writes the heap profiles of nodes 1 and 2 to
// rejoin-<partitions>-node-<id>-heap-<at>.pprof.
func saveHeaps(b *testing.B, c *proctest.Cluster, profDir string, parts int32, at string) {
	for _, id := range []int32{1, 2} {
		saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/heap", c.Node(id).Admin()),
			filepath.Join(profDir, fmt.Sprintf("rejoin-%d-node-%d-heap-%s.pprof", parts, id, at)))
	}
}
