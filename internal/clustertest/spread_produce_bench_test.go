package clustertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/procstat"
	"github.com/shale-io/shale/internal/proctest"
)

const (
	// spreadRun is how long the measured part of a spread produce run
	// lasts, for 8 and for 1,000 partitions alike: a run bounded by a
	// record count instead ends sooner at the higher rate, inside the
	// page cache's dirty limit, and compares a burst with a sustained
	// rate (500,000 records: 8 partitions 2.8 s at 180 MB/s, 1,000
	// partitions 7 s; over 20 s each, 76 and 86 MB/s).
	spreadRun = 10 * time.Second
	// spreadMaxRecords bounds the records of the measured part (3 GB).
	spreadMaxRecords = 3_000_000
	// spreadWarmup records are acknowledged before the measured part and
	// not counted: connections, the producer id, the first batches.
	spreadWarmup = 5_000
)

// BenchmarkSpreadProduce is issue 23's produce figure, for `make bench`:
// three shale processes on one NATS server (in this process) hold one RF=3
// topic (min.insync.replicas=2) of 8, then of 1,000 partitions, and one
// franz-go producer (acks=all, idempotent, its default sticky partitioner,
// no compression) writes 1 KiB records as fast as acknowledgements allow:
// spreadWarmup records unmeasured, then spreadRun (at most spreadMaxRecords).
// Reported: MB/s acknowledged and the three nodes' CPU seconds per GB
// acknowledged (node-cpu-s/GB, from /proc/<pid>/stat), the 8-partition run
// the peer; and, to read them by, this process's CPU seconds per GB
// (client-cpu-s/GB: the producer and the NATS server) and the records per
// acknowledged batch, and from the nodes' request metrics the Produce
// requests a second and their mean time in the leader (produce-ms) and
// waiting for the followers (produce-remote-ms, and produce-response-queue-ms
// for the part of that wait spent behind earlier replies), and the ISR
// changes the nodes logged meanwhile; then a consumer reads the records
// back (spreadConsume: consume-MB/s, consume-node-cpu-s/GB). With
// SHALE_BENCH_PROFILE_DIR set, each node serves pprof and a
// CPU profile of each node over the measured part is written there
// (spread-<partitions>-node-<id>.pprof). Asserts nothing about time.
//
// One iteration is the whole workload: run it with -benchtime 1x.
func BenchmarkSpreadProduce(b *testing.B) {
	for _, parts := range []int32{8, 1000} {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				spreadProduce(b, parts)
			}
		})
	}
}

func spreadProduce(b *testing.B, parts int32) {
	const topic = "spread"
	profDir := os.Getenv("SHALE_BENCH_PROFILE_DIR")
	var opts []proctest.ClusterOption
	opts = append(opts, proctest.ClusterName(fmt.Sprintf("spread %d", parts)))
	if profDir != "" {
		opts = append(opts, proctest.NodeEnv("SHALE_ADMIN_PPROF_ENABLE=true"))
	}
	c := proctest.StartCluster(b, shaleBin, []int32{1, 2, 3}, opts...)
	ctx := proctest.Context(b, 10*time.Minute)
	mcl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka()), kgo.MetadataMinAge(20*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer mcl.Close()
	adm := kadm.NewClient(mcl) // Metadata answered from a cache younger than 20 ms, not 5 s
	createRF3(b, ctx, adm, topic, parts)
	// Every partition led and with a full ISR before the clock starts.
	if err := proctest.WaitFor(5*time.Minute, func() bool {
		md, err := adm.Metadata(ctx, topic)
		return err == nil && everyPartition(md, topic, parts, func(pd kadm.PartitionDetail) bool { return pd.Leader >= 0 && len(pd.ISR) == 3 })
	}); err != nil {
		b.Fatalf("full ISRs: %v", err)
	}
	// One record to each partition first, so that the measured part does
	// not include the first append of each partition's leader epoch (its
	// leader-epoch-checkpoint), as a long-running topic would not.
	warm, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]*kgo.Record, parts)
	for p := range parts {
		recs[p] = &kgo.Record{Topic: topic, Partition: p, Value: []byte("warm")}
	}
	err = warm.ProduceSync(ctx, recs...).FirstErr()
	warm.Close()
	if err != nil {
		b.Fatalf("a record to each partition: %v", err)
	}
	var batches batchCounter
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka(), c.Node(2).Kafka(), c.Node(3).Kafka()),
		kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(10_000), kgo.RecordDeliveryTimeout(2*time.Minute), kgo.WithHooks(&batches))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 1024)
	rand.Read(value)

	var acked, failed atomic.Int64
	var firstErr atomic.Value
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for pctx.Err() == nil {
			cl.Produce(pctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					if pctx.Err() == nil && failed.Add(1) == 1 {
						firstErr.Store(err)
					}
					return
				}
				acked.Add(1)
			})
		}
	}()
	if err := proctest.WaitFor(2*time.Minute, func() bool { return acked.Load() >= spreadWarmup || failed.Load() > 0 }); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	var profs sync.WaitGroup
	if profDir != "" {
		for _, id := range c.IDs() {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.Node(id).Admin(), int(spreadRun.Seconds()))
			path := filepath.Join(profDir, fmt.Sprintf("spread-%d-node-%d.pprof", parts, id))
			profs.Add(1)
			go func() { defer profs.Done(); saveProfile(b, url, path) }()
		}
	}
	req0, isr0 := produceTimes(b, c), isrChanges(c)
	cpu0, self0, from, acked0, batches0 := nodesCPU(b, c), selfCPU(b), time.Now(), acked.Load(), batches.n.Load()
	deadline := from.Add(spreadRun)
	// The measured window: until spreadRun passes, enough records are
	// acknowledged or a produce fails.
	_ = proctest.Poll(time.Until(deadline), 20*time.Millisecond, func() bool {
		return acked.Load()-acked0 >= spreadMaxRecords || failed.Load() != 0
	})
	cpu1, self1, took, n, nb := nodesCPU(b, c), selfCPU(b), time.Since(from), acked.Load()-acked0, batches.n.Load()-batches0
	req1 := produceTimes(b, c)
	stop()
	wg.Wait()
	profs.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d records failed, first: %v", f, firstErr.Load())
	}
	gb := float64(n*int64(len(value))) / 1e9
	b.ReportMetric(float64(n*int64(len(value)))/1e6/took.Seconds(), "MB/s")
	b.ReportMetric((cpu1-cpu0).Seconds()/gb, "node-cpu-s/GB")
	b.ReportMetric((self1-self0).Seconds()/gb, "client-cpu-s/GB")
	b.ReportMetric(float64(n), "records")
	if k := req1.count - req0.count; k > 0 {
		b.ReportMetric(k/took.Seconds(), "produce-req/s")
		b.ReportMetric((req1.total-req0.total)/k*1000, "produce-ms")
		b.ReportMetric((req1.queue-req0.queue)/k*1000, "produce-queue-ms")
		b.ReportMetric((req1.local-req0.local)/k*1000, "produce-local-ms")
		b.ReportMetric((req1.remote-req0.remote)/k*1000, "produce-remote-ms")
		b.ReportMetric((req1.respQueue-req0.respQueue)/k*1000, "produce-response-queue-ms")
	}
	if nb > 0 {
		b.ReportMetric(float64(n)/float64(nb), "records/batch")
	}
	b.ReportMetric(float64(isrChanges(c)-isr0), "isr-changes")
	spreadConsume(b, c, topic, acked.Load())
	c.CheckNoPanic()
}

// spreadConsume is the consumer's side of issue 23's figure: one franz-go
// consumer (no group, every partition of topic from its start, the client's
// default fetch sizes) reads what the producer wrote for spreadRun or until
// it has all total records, and the consumed MB/s (record values) and the
// nodes' CPU seconds per GB consumed are reported (consume-MB/s,
// consume-node-cpu-s/GB; the 8-partition run is the peer). The records were
// just written, so both sizes read from the page cache.
func spreadConsume(b *testing.B, c *proctest.Cluster, topic string, total int64) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka(), c.Node(2).Kafka(), c.Node(3).Kafka()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), spreadRun)
	defer cancel()
	var n, bytes int64
	cpu0, from := nodesCPU(b, c), time.Now()
	for n < total && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				b.Fatalf("consuming %s-%d: %v", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			n++
			bytes += int64(len(r.Value))
		})
	}
	cpu1, took := nodesCPU(b, c), time.Since(from)
	if n == 0 {
		b.Fatal("consumed nothing")
	}
	b.ReportMetric(float64(bytes)/1e6/took.Seconds(), "consume-MB/s")
	b.ReportMetric((cpu1-cpu0).Seconds()/(float64(bytes)/1e9), "consume-node-cpu-s/GB")
}

// requestTimes sums the nodes' Produce request metrics: requests, seconds
// in all and waiting for the followers (remote).
type requestTimes struct{ count, total, queue, local, remote, respQueue float64 }

func produceTimes(b *testing.B, c *proctest.Cluster) requestTimes {
	var s requestTimes
	for _, id := range c.IDs() {
		m := proctest.RequestSamples(b, c.Node(id).MetricLines(b), "Produce")
		s.count += m["kafka_network_requestmetrics_total_time_seconds_count"]
		s.total += m["kafka_network_requestmetrics_total_time_seconds_sum"]
		s.queue += m["kafka_network_requestmetrics_request_queue_time_seconds_sum"]
		s.local += m["kafka_network_requestmetrics_local_time_seconds_sum"]
		s.remote += m["kafka_network_requestmetrics_remote_time_seconds_sum"]
		s.respQueue += m["kafka_network_requestmetrics_response_queue_time_seconds_sum"]
	}
	return s
}

// isrChanges is how many ISR changes the nodes have logged.
func isrChanges(c *proctest.Cluster) int {
	n := 0
	for _, id := range c.IDs() {
		n += c.Node(id).CountLines("ISR changed")
	}
	return n
}

// batchCounter counts the batches the producer had acknowledged.
type batchCounter struct{ n atomic.Int64 }

func (c *batchCounter) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	c.n.Add(1)
}

// selfCPU is this process's CPU time: the producer (and the NATS server).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nodesCPU is the CPU time of the cluster's live node processes, summed.
func nodesCPU(b *testing.B, c *proctest.Cluster) time.Duration {
	var sum time.Duration
	for _, id := range c.IDs() {
		cmd := c.Node(id).Cmd()
		if cmd == nil || cmd.Process == nil {
			b.Fatalf("node %d not running", id)
		}
		st, err := procstat.Read(cmd.Process.Pid)
		if err != nil {
			b.Fatalf("node %d: %v", id, err)
		}
		sum += st.CPU
	}
	return sum
}

// saveProfile writes the CPU profile served at url (it answers once the
// profile is done) to path; a failure is logged, not fatal.
func saveProfile(b *testing.B, url, path string) {
	r, err := http.Get(url)
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		b.Logf("profile %s: %s", url, r.Status)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, r.Body); err != nil {
		b.Logf("profile %s: %v", path, err)
	}
}

// startSelfProfile starts a CPU profile of this process (the NATS server's
// side of a benchmark) written to path; the returned func stops it. A
// failure is logged, not fatal (another profile may be running: go test
// -cpuprofile).
func startSelfProfile(b *testing.B, path string) func() {
	f, err := os.Create(path)
	if err != nil {
		b.Logf("profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Logf("profile %s: %v", path, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Logf("profile %s: %v", path, err)
		}
	}
}
