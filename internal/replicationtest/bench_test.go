package replicationtest

import (
	"crypto/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	benchValueSize = 1024
	// fixedRateRun bounds the latency run: at most this long and this
	// many records.
	fixedRateRun     = 2 * time.Second
	fixedRateMaxRecs = 200_000
)

// BenchmarkReplicatedProduce runs on three shale processes (one NATS
// server in the test process): franz-go produce throughput of 1 KiB
// records to a 3-partition RF=1 topic with acks=1 (rf1-acks-1, the peer)
// and to a 3-partition RF=3, min.insync.replicas=2 topic with acks=all and
// idempotence (rf3-acks-all), then the acks=all ack latency at a fixed rate
// of half the rf3-acks-all rate just measured (rf3-acks-all-fixed-rate:
// p50-ms, p99-ms, p999-ms, measured from each record's scheduled send time
// so a stall is not hidden by sending later), and the same at 1000
// records per second (rf3-acks-all-1000rps). Records are not compressed.
func BenchmarkReplicatedProduce(b *testing.B) {
	c := startCluster(b, "bench3", 3)
	ctx := ctxFor(b, 10*time.Minute)
	adm := kadm.NewClient(c.nodes[0].client())
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "bench1"); err != nil {
		b.Fatal(err)
	}
	var rf3Rate float64
	b.Run("rf1-acks-1", func(b *testing.B) {
		produceMax(b, c, "bench1", kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	})
	b.Run("rf3-acks-all", func(b *testing.B) {
		rf3Rate = produceMax(b, c, "bench3", kgo.RequiredAcks(kgo.AllISRAcks()))
	})
	b.Run("rf3-acks-all-fixed-rate", func(b *testing.B) {
		if rf3Rate == 0 {
			b.Skip("needs rf3-acks-all in the same run for its rate")
		}
		for range b.N {
			fixedRate(b, c, "bench3", rf3Rate/2)
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
		seeds = append(seeds, n.kafka)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(10_000), kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	// Warm up: metadata, connections, producer id.
	ctx := ctxFor(b, 30*time.Second)
	for p := range c.parts {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: benchValue()}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	return cl
}

// produceMax produces b.N 1 KiB records as fast as acknowledgements allow
// and returns the rate in records per second.
func produceMax(b *testing.B, c *cluster, topic string, opts ...kgo.Opt) float64 {
	cl := benchClient(b, c, topic, opts...)
	ctx := ctxFor(b, 5*time.Minute)
	value := benchValue()
	var failed atomic.Int64
	var firstErr atomic.Value
	b.SetBytes(benchValueSize)
	b.ResetTimer()
	begin := time.Now()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	took := time.Since(begin)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d records failed: %v", n, b.N, firstErr.Load())
	}
	rate := float64(b.N) / took.Seconds()
	b.ReportMetric(rate, "records/s")
	return rate
}

// fixedRate produces 1 KiB records with acks=all at rate records per
// second for fixedRateRun (at most fixedRateMaxRecs records) and reports
// the ack latency percentiles, each latency measured from the time the
// record was due.
func fixedRate(b *testing.B, c *cluster, topic string, rate float64) {
	cl := benchClient(b, c, topic, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	ctx := ctxFor(b, time.Minute)
	count := min(int(rate*fixedRateRun.Seconds()), fixedRateMaxRecs)
	if count < 100 {
		b.Fatalf("rate %.0f/s is too low to measure", rate)
	}
	interval := time.Duration(float64(time.Second) / rate)
	value := benchValue()
	lat := make([]time.Duration, count)
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < count; {
		now := time.Now()
		for ; i < count; i++ { // send every record that is due
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
		if i < count {
			time.Sleep(time.Until(start.Add(time.Duration(i) * interval))) // pacing the load, not waiting on a condition
		}
	}
	wg.Wait()
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d records failed", n, count)
	}
	slices.Sort(lat)
	q := func(f float64) float64 {
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(0.999), "p999-ms")
}
