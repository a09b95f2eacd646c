package replicationtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/procstat"
	"github.com/shale-io/shale/internal/proctest"
)

// BenchmarkIdleReplication measures what an RF=3 topic of
// SHALE_BENCH_IDLE_PARTITIONS partitions (default 1000) costs three nodes,
// every partition led and with a full ISR. idle: nothing produced, over a
// 20 s window, each node's CPU and the bytes it read and wrote
// (/proc/PID/io rchar and wchar: sockets and files, almost all of it
// follower Fetch requests and answers at rest), reported per node as
// cpu-%-per-node (of one core) and io-bytes/s-per-node; with fetch sessions
// (KIP-227) an idle follower's fetch names no partition and its answer
// carries none. produce-acks-all: 20,000 records of 1 KiB round robin over
// the partitions, acks=all: MB/s and the nodes' CPU seconds per GB.
func BenchmarkIdleReplication(b *testing.B) {
	parts := int32(1000)
	if v, err := strconv.Atoi(os.Getenv("SHALE_BENCH_IDLE_PARTITIONS")); err == nil && v > 0 {
		parts = int32(v)
	}
	c := startCluster(b, "idle-seed", 1)
	ctx := proctest.Context(b, 20*time.Minute)
	adm := kadm.NewClient(c.nodes[0].Client())
	two := "2"
	if _, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &two}, "idle"); err != nil {
		b.Fatal(err)
	}
	created := time.Now()
	var last string
	if err := proctest.WaitFor(15*time.Minute, func() bool {
		md, err := adm.Metadata(ctx, "idle")
		if err != nil {
			last = err.Error()
			return false
		}
		t := md.Topics["idle"]
		if int32(len(t.Partitions)) != parts {
			last = fmt.Sprintf("%d partitions", len(t.Partitions))
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 1 || len(p.ISR) != 3 {
				last = fmt.Sprintf("partition %d leader %d isr %v", p.Partition, p.Leader, p.ISR)
				return false
			}
		}
		return true
	}); err != nil {
		b.Fatalf("%d partitions not led with full ISRs: %s", parts, last)
	}
	b.Logf("%d partitions led with full ISRs %v after creation", parts, time.Since(created).Round(time.Second))
	b.Run("idle", func(b *testing.B) { idleCost(b, c) })
	b.Run("produce-acks-all", func(b *testing.B) { spreadProduce(b, c, "idle", parts) })
}

// spreadProduce produces spreadRecords 1 KiB records with acks=all, round
// robin over the topic's partitions, and reports MB/s and the three
// nodes' CPU seconds per GB produced.
func spreadProduce(b *testing.B, c *cluster, topic string, parts int32) {
	const spreadRecords = 20_000
	var seeds []string
	for _, n := range c.nodes {
		seeds = append(seeds, n.Kafka())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(10_000))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(b, 10*time.Minute)
	value := benchValue()
	for range b.N {
		from := sampleNodes(b, c)
		errs := make(chan error, 1)
		for range spreadRecords {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		to := sampleNodes(b, c)
		secs := to.at.Sub(from.at).Seconds()
		var cpu float64
		for i := range c.nodes {
			cpu += (to.cpu[i] - from.cpu[i]).Seconds()
		}
		gb := float64(spreadRecords*len(value)) / 1e9
		b.ReportMetric(gb*1e3/secs, "MB/s")
		b.ReportMetric(cpu/gb, "node-cpu-s/GB")
		b.Logf("%d records over %d partitions in %.1f s; nodes' CPU %.1f s", spreadRecords, parts, secs, cpu)
	}
}

// idleCost measures each node's CPU and I/O at rest over a 20 s window.
func idleCost(b *testing.B, c *cluster) {
	const window = 20 * time.Second
	for range b.N {
		from := sampleNodes(b, c)
		<-time.After(window) // the measured window: a cost at rest, not a wait for an event
		to := sampleNodes(b, c)
		secs := to.at.Sub(from.at).Seconds()
		var cpu, io float64
		for i := range c.nodes {
			cpu += (to.cpu[i] - from.cpu[i]).Seconds() / secs * 100
			io += float64(to.io[i]-from.io[i]) / secs
			b.Logf("node %d: cpu %.2f%%, io %.0f B/s", i+1, (to.cpu[i]-from.cpu[i]).Seconds()/secs*100, float64(to.io[i]-from.io[i])/secs)
		}
		b.ReportMetric(cpu/float64(len(c.nodes)), "cpu-%-per-node")
		b.ReportMetric(io/float64(len(c.nodes)), "io-bytes/s-per-node")
	}
}

// nodeSample is each node's CPU and rchar+wchar at one moment.
type nodeSample struct {
	at  time.Time
	cpu []time.Duration
	io  []int64
}

func sampleNodes(b *testing.B, c *cluster) nodeSample {
	s := nodeSample{at: time.Now()}
	for _, n := range c.nodes {
		pid := n.Cmd().Process.Pid
		st, err := procstat.Read(pid)
		if err != nil {
			b.Fatal(err)
		}
		s.cpu = append(s.cpu, st.CPU)
		s.io = append(s.io, procIO(b, pid))
	}
	return s
}

// procIO is rchar + wchar of pid: bytes read and written through read and
// write calls, sockets included.
func procIO(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		b.Fatal(err)
	}
	var sum int64
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "rchar" || k == "wchar") {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			sum += n
		}
	}
	return sum
}
