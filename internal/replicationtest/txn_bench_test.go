package replicationtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// txnInterval is how long a transaction of the transactional benchmark
// stays open: issue 17's "a transaction every 100 ms", the commit interval
// of a Kafka Streams application with exactly-once at its default.
const txnInterval = 100 * time.Millisecond

// BenchmarkTransactionalProduce runs on three shale processes: franz-go
// produce throughput of 1 KiB records to a 3-partition RF=3,
// min.insync.replicas=2 topic with acks=all, by an idempotent producer
// (idempotent, the peer) and by a transactional one that commits a
// transaction every txnInterval (txn-100ms: each transaction adds its
// partitions, and its commit writes the markers and waits for them), both
// at the maximum rate, measured over fixedRateRun after a warm-up.
func BenchmarkTransactionalProduce(b *testing.B) {
	c := startCluster(b, "benchtxn", 3)
	b.Run("idempotent", func(b *testing.B) {
		for range b.N {
			produceMax(b, c, "benchtxn", kgo.RequiredAcks(kgo.AllISRAcks()))
		}
	})
	b.Run("txn-100ms", func(b *testing.B) {
		for i := range b.N {
			produceTransactional(b, c, "benchtxn", fmt.Sprintf("bench-txn-%d", i))
		}
	})
}

// produceTransactional produces 1 KiB records as fast as it can in
// transactions of txnInterval, each committed, and reports the committed
// rate of the measured part (records in transactions that ended within
// it).
func produceTransactional(b *testing.B, c *cluster, topic, txnID string) {
	b.StopTimer()
	syscall.Sync()
	b.StartTimer()
	var seeds []string
	for _, n := range c.nodes {
		seeds = append(seeds, n.Kafka())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(10_000), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(benchLinger),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(b, 5*time.Minute)
	// Warm up as benchClient does, in one transaction: metadata,
	// connections, the producer id, the coordinator.
	if err := cl.BeginTransaction(); err != nil {
		b.Fatal(err)
	}
	for range c.parts {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: benchValue()}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		b.Fatal(err)
	}
	value := benchValue()
	var failed atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	begin := time.Now()
	var from time.Time
	var committed, txns int64
	for sent := 0; sent < maxRecs; {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var n int64
		for time.Since(start) < txnInterval && sent < maxRecs {
			for range 256 {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
				})
				n++
				sent++
			}
		}
		ectx, cancel := context.WithTimeout(ctx, time.Minute)
		err := cl.Flush(ectx)
		if err == nil {
			err = cl.EndTransaction(ectx, kgo.TryCommit)
		}
		cancel()
		if err != nil || failed.Load() > 0 {
			b.Fatalf("transaction %d: %v (records failed: %d, first %v)", txns, err, failed.Load(), firstErr.Load())
		}
		now := time.Now()
		switch {
		case from.IsZero() && now.Sub(begin) >= fixedRateWarmup:
			from = now
		case !from.IsZero():
			committed += n
			txns++
		}
		if !from.IsZero() && now.Sub(from) >= fixedRateRun {
			break
		}
	}
	b.StopTimer()
	if from.IsZero() || txns == 0 {
		b.Fatalf("the run ended (%d records) before its measured part", maxRecs)
	}
	rate := float64(committed) / time.Since(from).Seconds()
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(rate*benchValueSize/1e6, "MB/s")
	b.ReportMetric(float64(txns)/time.Since(from).Seconds(), "txns/s")
}
