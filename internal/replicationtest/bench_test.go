package replicationtest

import (
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
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
	// benchLinger is every benchmark producer's linger: the maximum rate and
	// the latency at half of it are measured with the same client settings.
	benchLinger = time.Millisecond
	// pacerTick is the fixed-rate sender's shortest sleep.
	pacerTick      = time.Millisecond
	benchValueSize = 1024
	// fixedRateWarmup is sent at the run's rate before the measured part
	// and not counted: a new client's first batches (connections, producer
	// id, the first partition batches) are not the steady state.
	fixedRateWarmup = 500 * time.Millisecond
	// fixedRateRun bounds the measured part of a latency run: at most this
	// long and this many records.
	fixedRateRun     = 3 * time.Second
	fixedRateMaxRecs = 300_000
	// maxRecs bounds a maximum-rate run (warm-up and measured part): at
	// most this many records, whatever the rate.
	maxRecs = 4_000_000
)

// BenchmarkReplicatedProduce runs on three shale processes (one NATS
// server in the test process): franz-go produce throughput of 1 KiB
// records to a 3-partition RF=1 topic with acks=1 (rf1-acks-1, the peer)
// and to a 3-partition RF=3, min.insync.replicas=2 topic with acks=all and
// idempotence (rf3-acks-all), then the acks=all ack latency at a fixed rate
// of half the rf3-acks-all rate just measured (rf3-acks-all-fixed-rate:
// p50-ms, p99-ms, p999-ms, measured from each record's scheduled send time
// so a stall is not hidden by sending later), the same at a quarter of it
// (rf3-acks-all-quarter-rate) and at 1000 records per second
// (rf3-acks-all-1000rps). Records are not compressed;
// every producer lingers benchLinger.
//
// Before each run the machine's dirty pages are written out (sync(2), not
// timed): a run does not inherit the previous one's writeback, as a
// cluster at a steady load carries no backlog from a burst at twice that
// rate. The latency runs also report, from the brokers' request metrics,
// the mean time a Produce spent in the leader (produce-broker-ms) and the
// part of it waiting for the followers (produce-remote-ms), and the upper
// bound of the histogram bucket that holds the brokers' own p99
// (produce-broker-p99-max-ms), over the whole run with its warm-up, so
// that the client-side figures can be set against the brokers' own.
//
// The latency runs also report the CPU of the measured part as shares of
// the whole machine (all cores, 0-100): bench-cpu-% for the three brokers
// plus this process (client, NATS), machine-cpu-% for everything running
// on the machine. The three brokers and the client share the cores, so
// the latency is only as good as the CPU left to them: machine-cpu-% near
// 100 says the figure is one of a saturated machine, and machine-cpu-%
// minus bench-cpu-% is what neighbours took.
func BenchmarkReplicatedProduce(b *testing.B) {
	c := startCluster(b, "bench3", 3)
	ctx := proctest.Context(b, 10*time.Minute)
	adm := kadm.NewClient(c.nodes[0].Client())
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "bench1"); err != nil {
		b.Fatal(err)
	}
	var rf3Rate float64
	b.Run("rf1-acks-1", func(b *testing.B) {
		for range b.N {
			produceMax(b, c, "bench1", kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		}
	})
	b.Run("rf3-acks-all", func(b *testing.B) {
		for range b.N {
			rf3Rate = produceMax(b, c, "bench3", kgo.RequiredAcks(kgo.AllISRAcks()))
		}
	})
	b.Run("rf3-acks-all-fixed-rate", func(b *testing.B) {
		if rf3Rate == 0 {
			b.Skip("needs rf3-acks-all in the same run for its rate")
		}
		for range b.N {
			fixedRate(b, c, "bench3", rf3Rate/2)
		}
	})
	// Below the goal's point: how the latency falls with the load.
	b.Run("rf3-acks-all-quarter-rate", func(b *testing.B) {
		if rf3Rate == 0 {
			b.Skip("needs rf3-acks-all in the same run for its rate")
		}
		for range b.N {
			fixedRate(b, c, "bench3", rf3Rate/4)
		}
	})
	// A light load beside it: where the latency floor is, apart from
	// saturating two shared cores.
	b.Run("rf3-acks-all-1000rps", func(b *testing.B) {
		for range b.N {
			fixedRate(b, c, "bench3", 1000)
		}
	})
}

// benchValue is a record value of benchValueSize random bytes: the
// producer does not compress, and the value would not compress anyway.
func benchValue() []byte {
	v := make([]byte, benchValueSize)
	rand.Read(v)
	return v
}

// benchClient is a producer on every node with the given options.
func benchClient(b *testing.B, c *cluster, topic string, opts ...kgo.Opt) *kgo.Client {
	var seeds []string
	for _, n := range c.nodes {
		seeds = append(seeds, n.Kafka())
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(10_000), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(benchLinger)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	// Warm up: metadata, connections, producer id.
	ctx := proctest.Context(b, 30*time.Second)
	for p := range c.parts {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: benchValue()}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	return cl
}

// produceMax produces 1 KiB records as fast as acknowledgements allow and
// returns the sustained rate in records per second: the client's buffer
// is kept full for fixedRateWarmup unmeasured, then the records
// acknowledged during the next fixedRateRun are counted (at most
// maxRecs records in all). A run as short as b.N records at -benchtime
// 500ms would mostly measure the client's empty buffer and a clean page
// cache filling, a burst two or more times the rate the cluster keeps up,
// and half of it would not be half of what it can do. It also reports MB/s
// and the CPU shares of the measured part (see BenchmarkReplicatedProduce):
// beside the latency runs' they show what a record costs with the batches
// a full buffer makes and with the paced runs' smaller ones (same linger,
// benchLinger).
func produceMax(b *testing.B, c *cluster, topic string, opts ...kgo.Opt) float64 {
	b.StopTimer()
	syscall.Sync()
	b.StartTimer()
	cl := benchClient(b, c, topic, opts...)
	ctx := proctest.Context(b, 5*time.Minute)
	value := benchValue()
	var acked, failed atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	begin := time.Now()
	var from, to time.Time
	var acked0, acked1 int64
	var cpu0, cpu1 cpuSample
	for i := 0; i < maxRecs; i++ {
		// Produce blocks while the buffer is full, so the clock is read
		// often enough: every 256 records is far under a millisecond.
		if i%256 == 0 {
			now := time.Now()
			if from.IsZero() && now.Sub(begin) >= fixedRateWarmup {
				from, acked0, cpu0 = now, acked.Load(), sampleCPU(c)
			}
			if !from.IsZero() && now.Sub(from) >= fixedRateRun {
				break
			}
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			acked.Add(1)
		})
	}
	to, acked1, cpu1 = time.Now(), acked.Load(), sampleCPU(c)
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d records failed: %v", n, firstErr.Load())
	}
	if from.IsZero() || acked1 == acked0 {
		b.Fatalf("the run ended (%d records) before its measured part", maxRecs)
	}
	rate := float64(acked1-acked0) / to.Sub(from).Seconds()
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(rate*benchValueSize/1e6, "MB/s")
	if bench, machine, ok := cpu1.sharesSince(cpu0); ok {
		b.ReportMetric(bench, "bench-cpu-%")
		b.ReportMetric(machine, "machine-cpu-%")
	}
	return rate
}

// fixedRate produces 1 KiB records with acks=all at rate records per
// second, fixedRateWarmup of them unmeasured and then fixedRateRun (at
// most fixedRateMaxRecs records), and reports the ack latency percentiles
// of the measured records, each latency measured from the time the record
// was due, and the CPU shares of the measured part (see
// BenchmarkReplicatedProduce).
func fixedRate(b *testing.B, c *cluster, topic string, rate float64) {
	b.StopTimer()
	syscall.Sync()
	b.StartTimer()
	cl := benchClient(b, c, topic, kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx := proctest.Context(b, time.Minute)
	count := min(int(rate*fixedRateRun.Seconds()), fixedRateMaxRecs)
	if count < 100 {
		b.Fatalf("rate %.0f/s is too low to measure", rate)
	}
	warm := int(rate * fixedRateWarmup.Seconds())
	total := warm + count
	interval := time.Duration(float64(time.Second) / rate)
	value := benchValue()
	lat := make([]time.Duration, total)
	var failed atomic.Int64
	var wg sync.WaitGroup
	var cpu0 cpuSample
	// Scraped before the warm-up, not in the pacing loop: three HTTP
	// requests there would make records late. The means cover the warm-up.
	prod0 := produceStages(b, c)
	b.ResetTimer()
	start := time.Now()
	pace := time.NewTicker(pacerTick)
	defer pace.Stop()
	for i := 0; i < total; {
		now := time.Now()
		if i >= warm && cpu0.at.IsZero() {
			cpu0 = sampleCPU(c) // the measured part starts
		}
		for ; i < total; i++ { // send every record that is due
			due := start.Add(time.Duration(i) * interval)
			if due.After(now) {
				break
			}
			wg.Add(1)
			slot := &lat[i]
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					failed.Add(1)
				}
				*slot = time.Since(due)
			})
		}
		if i < total {
			// Pacing the load: a tick every pacerTick, not a wake-up per
			// record (every few µs at these rates, a core of the two spent
			// on timers). Records due between ticks go out at the next
			// one; their latency still counts from when they were due.
			<-pace.C
		}
	}
	wg.Wait()
	cpu1 := sampleCPU(c)
	prod1 := produceStages(b, c)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d records failed", n, total)
	}
	lat = lat[warm:]
	slices.Sort(lat)
	q := func(f float64) float64 {
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(0.999), "p999-ms")
	if bench, machine, ok := cpu1.sharesSince(cpu0); ok {
		b.ReportMetric(bench, "bench-cpu-%")
		b.ReportMetric(machine, "machine-cpu-%")
	}
	if n := prod1.count - prod0.count; n > 0 {
		b.ReportMetric((prod1.total-prod0.total)/n*1000, "produce-broker-ms")
		b.ReportMetric((prod1.remote-prod0.remote)/n*1000, "produce-remote-ms")
		b.ReportMetric(prod1.p99Bound(prod0), "produce-broker-p99-max-ms")
	}
}

// produceSample sums the brokers' Produce request metrics: requests,
// seconds in total and waiting for replication (remote), and the total
// time histogram's cumulative bucket counts by upper bound.
type produceSample struct {
	count, total, remote float64
	buckets              map[float64]float64
}

// p99Bound is the upper bound of the total time histogram bucket that
// holds the 99th percentile of the Produce requests between from and s,
// in ms: the brokers' own p99 is at most this (the buckets are coarse:
// 0.5, 1, 2.5, 5, 10, 25 ms, ...). -1 if nothing was counted.
func (s produceSample) p99Bound(from produceSample) float64 {
	n := s.count - from.count
	if n <= 0 {
		return -1
	}
	bounds := make([]float64, 0, len(s.buckets))
	for le := range s.buckets {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	for _, le := range bounds {
		if s.buckets[le]-from.buckets[le] >= 0.99*n {
			return le * 1000
		}
	}
	return -1
}

// produceStages scrapes every broker's /metrics for its Produce request
// histograms' counts and sums.
func produceStages(b *testing.B, c *cluster) produceSample {
	s := produceSample{buckets: map[float64]float64{}}
	for _, n := range c.nodes {
		lines := n.MetricLines(b)
		for _, line := range lines {
			if le, v, ok := produceBucket(line); ok {
				s.buckets[le] += v
			}
		}
		m := proctest.RequestSamples(b, lines, "Produce")
		s.count += m["kafka_network_requestmetrics_total_time_seconds_count"]
		s.total += m["kafka_network_requestmetrics_total_time_seconds_sum"]
		s.remote += m["kafka_network_requestmetrics_remote_time_seconds_sum"]
	}
	return s
}

// produceBucket parses a line of the Produce total time histogram,
// kafka_network_requestmetrics_total_time_seconds_bucket{le="0.005",request="Produce"} 12
// (labels in either order); +Inf is left out.
func produceBucket(line string) (le, v float64, ok bool) {
	rest, found := strings.CutPrefix(line, "kafka_network_requestmetrics_total_time_seconds_bucket{")
	if !found || !strings.Contains(rest, `request="Produce"`) {
		return 0, 0, false
	}
	labels, value, found := strings.Cut(rest, "} ")
	if !found {
		return 0, 0, false
	}
	_, leVal, found := strings.Cut(labels, `le="`)
	if !found {
		return 0, 0, false
	}
	leVal, _, _ = strings.Cut(leVal, `"`)
	le, err1 := strconv.ParseFloat(leVal, 64)
	v, err2 := strconv.ParseFloat(value, 64)
	if err1 != nil || err2 != nil || math.IsInf(le, 1) {
		return 0, 0, false
	}
	return le, v, true
}

// cpuSample is the CPU time used so far by the benchmark's processes (the
// brokers and this one) and by the whole machine, from /proc.
type cpuSample struct {
	at      time.Time
	bench   time.Duration
	machine time.Duration // busy time summed over all cores
	ok      bool
}

func sampleCPU(c *cluster) cpuSample {
	s := cpuSample{at: time.Now(), ok: true}
	for _, n := range c.nodes {
		cmd := n.Cmd()
		if cmd == nil || cmd.Process == nil {
			s.ok = false
			continue
		}
		st, err := procstat.Read(cmd.Process.Pid)
		s.ok = s.ok && err == nil
		s.bench += st.CPU
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		s.ok = false
	}
	s.bench += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	m, err := machineBusy()
	s.ok = s.ok && err == nil
	s.machine = m
	return s
}

// sharesSince returns the benchmark's and the machine's CPU between from
// and s, in percent of all cores; ok is false where /proc could not be read.
func (s cpuSample) sharesSince(from cpuSample) (bench, machine float64, ok bool) {
	wall := s.at.Sub(from.at).Seconds() * float64(cpuCount())
	if !s.ok || !from.ok || wall <= 0 {
		return 0, 0, false
	}
	return 100 * (s.bench - from.bench).Seconds() / wall, 100 * (s.machine - from.machine).Seconds() / wall, true
}

// machineBusy is the machine's non-idle CPU time (all but idle and iowait)
// summed over all cores, from the first line of /proc/stat.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("malformed /proc/stat")
	}
	var busy int64
	for i, x := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are already in user
			continue
		}
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/stat")
		}
		busy += v
	}
	return time.Duration(busy) * procstat.ClockTick, nil
}

// cpuCount is the number of CPUs /proc/stat sums over.
func cpuCount() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 1
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "cpu") && !strings.HasPrefix(l, "cpu ") {
			n++
		}
	}
	return max(n, 1)
}
