package tieringe2e

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering"
)

// Sizes of the cold-replay benchmark: 1 KiB incompressible values in
// 16 MiB segments, benchSegments of them in the bucket.
const (
	benchSegmentBytes = 16 << 20
	benchValueBytes   = 1024
	benchSegments     = 4
	benchChunkBytes   = 8 << 20 // the cold reader's default chunk
	// benchGetsInFlight is how many ranged GETs the plain reader keeps in
	// flight: as many as the cold reader does for a sequential consumer
	// (the read's own chunk and coldread's default ReadAheadChunks past
	// it), so that the peer gets the same concurrency as Shale.
	benchGetsInFlight = 3
)

// coldFixture is a node on versitygw whose topic holds benchSegments
// segments only in the bucket.
type coldFixture struct {
	env      s3Env
	dir      string
	node     *broker.Node
	topic    string
	coldEnd  int64 // the local log start: every offset below is remote only
	segs     []controlplane.RemoteSegment
	logBytes int64 // .log bytes of segs
	// uploadReqPerGB: bucket calls of every kind made while uploading, per
	// GB uploaded (all objects of a segment, not only its .log).
	uploadReqPerGB float64
}

func startColdFixture(b *testing.B) *coldFixture {
	f := &coldFixture{env: startS3(b), dir: b.TempDir(), topic: "replay"}
	f.node = startNode(b, f.dir, f.env.srv.Endpoint, f.env.bucket)
	createTopic(b, f.node.KafkaAddr(), f.topic, 1, map[string]*string{
		"segment.bytes": new("16777216"), "local.retention.bytes": new("1"), "remote.storage.enable": new("true"),
	})
	cl := newClient(b, f.node.KafkaAddr(), kgo.DefaultProduceTopic(f.topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	ctx := ctxT(b, 3*time.Minute)
	total := (benchSegments*benchSegmentBytes)/benchValueBytes + 2000 // records take a little over benchValueBytes
	val := make([]byte, benchValueBytes)
	seed := uint32(1)
	recs := make([]*kgo.Record, 0, 1000)
	for i := 0; i < total; i++ {
		v := make([]byte, len(val))
		for j := range v {
			seed = seed*1664525 + 1013904223
			v[j] = byte(seed >> 24)
		}
		recs = append(recs, &kgo.Record{Value: v})
		if len(recs) == cap(recs) || i == total-1 {
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	cl.Close()
	waitTiered(b, f.node, f.topic, benchSegments, 1)
	waitFor(b, 60*time.Second, "every closed segment tiered and deleted locally", func() bool {
		return len(f.node.Replicas().All()) > 0 && uploadLag(f.node, f.topic) == 0 && localSegments(f.node, f.topic) == 1
	})
	f.coldEnd = localLogStart(f.node, f.topic)
	for _, s := range finishedSegments(f.node, f.topic) {
		if s.EndOffset < f.coldEnd {
			f.segs = append(f.segs, s)
			f.logBytes += s.Size
		}
	}
	if len(f.segs) < benchSegments {
		b.Fatalf("%d cold segments, want %d", len(f.segs), benchSegments)
	}
	st := f.node.Tiering().Stats()
	f.uploadReqPerGB = float64(requests(f.node.BucketMetrics())) / (float64(st.BytesUploaded) / 1e9)
	return f
}

// uploadLag counts the closed local segments not yet tiered.
func uploadLag(n *broker.Node, topic string) int {
	for _, r := range n.Replicas().All() {
		if r.Topic() == topic && r.Partition() == 0 {
			return len(tiering.UploadPlan(r.Log().Segments(), finishedSegments(n, topic), r.HighWatermark(), r.Log().Epochs()))
		}
	}
	return -1
}

func localSegments(n *broker.Node, topic string) int {
	for _, r := range n.Replicas().All() {
		if r.Topic() == topic && r.Partition() == 0 {
			return len(r.Log().Segments())
		}
	}
	return -1
}

// requests sums the bucket calls of every operation.
func requests(c *objstore.Counters) int64 {
	var n int64
	for _, s := range c.Snapshot() {
		n += s.Requests
	}
	return n
}

// restart closes the node and starts a new one on the same data dir and
// bucket, so the next replay starts with empty chunk and index caches.
func (f *coldFixture) restart(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	f.node.Close(ctx)
	cancel()
	f.node = startNode(b, f.dir, f.env.srv.Endpoint, f.env.bucket)
}

// BenchmarkColdTierS3 measures a cold replay through Shale beside a plain
// read of the same objects from the same versitygw server, in one run:
//
//   - ColdReplayS3: a franz-go consumer reads partition 0 from offset 0 up
//     to the local log start (every byte from the bucket, the node restarted
//     before each replay so that its caches are cold). MB/s counts the .log
//     bytes of the replayed segments. It also reports S3 calls per GB
//     replayed and per GB uploaded (from the node's bucket metrics), and
//     cpu-s/GB: the test process's CPU (node and consumer) per GB. The
//     restart is in-process: the chunk buffers of the closed node's cache
//     are recycled by the next one (as a long-running node recycles
//     evicted chunks), so a replay after the first does not pay for the
//     first touch of fresh memory; the first replay (the benchmark's N=1
//     probe) does.
//   - ColdReplayRawFetchS3: the same replay with bare Fetch requests
//     (rawReplay) instead of a franz-go consumer: the client reads every
//     byte but checks only batch headers, so the figure is the node's cold
//     path more than the consumer's decoding (which runs in this process,
//     on the same two cores).
//   - PlainRangedGetS3: minio-go reads the same .log objects in ranged GETs
//     of the cold reader's chunk size (8 MiB), in order, benchGetsInFlight
//     at a time (the cold reader's read-ahead runs that many at once; a
//     one-at-a-time peer would be held to less concurrency than Shale);
//     cpu-s/GB is the test process's CPU (the minio-go client) per GB.
func BenchmarkColdTierS3(b *testing.B) {
	f := startColdFixture(b)
	b.Run("ColdReplayS3", func(b *testing.B) {
		b.SetBytes(f.logBytes)
		var calls int64
		var cpu time.Duration
		for range b.N {
			b.StopTimer()
			f.restart(b)
			before := requests(f.node.BucketMetrics())
			cl := newClient(b, f.node.KafkaAddr(), kgo.FetchMaxPartitionBytes(benchChunkBytes), kgo.FetchMaxBytes(4*benchChunkBytes),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{f.topic: {0: kgo.NewOffset().At(0)}}))
			ctx := ctxT(b, 2*time.Minute)
			b.StartTimer()
			cpu0 := processCPU(b)
			for next := int64(0); next < f.coldEnd; {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					b.Fatalf("replay reached offset %d of %d before the deadline", next, f.coldEnd)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset != next && r.Offset < f.coldEnd {
						b.Fatalf("replay: offset %d, want %d", r.Offset, next)
					}
					next = r.Offset + 1
				})
			}
			b.StopTimer()
			cpu += processCPU(b) - cpu0
			cl.Close()
			calls += requests(f.node.BucketMetrics()) - before
			b.StartTimer()
		}
		b.ReportMetric(float64(calls)/(float64(f.logBytes)*float64(b.N)/1e9), "req/GB-replayed")
		b.ReportMetric(f.uploadReqPerGB, "req/GB-uploaded")
		b.ReportMetric(cpu.Seconds()/(float64(f.logBytes)*float64(b.N)/1e9), "cpu-s/GB")
	})
	b.Run("ColdReplayRawFetchS3", func(b *testing.B) {
		b.SetBytes(f.logBytes)
		var cpu time.Duration
		for range b.N {
			b.StopTimer()
			f.restart(b)
			cl := newClient(b, f.node.KafkaAddr())
			ctx := ctxT(b, 2*time.Minute)
			b.StartTimer()
			cpu0 := processCPU(b)
			rawReplay(b, ctx, cl, f.topic, f.coldEnd)
			b.StopTimer()
			cpu += processCPU(b) - cpu0
			cl.Close()
			b.StartTimer()
		}
		b.ReportMetric(cpu.Seconds()/(float64(f.logBytes)*float64(b.N)/1e9), "cpu-s/GB")
	})
	b.Run("PlainRangedGetS3", func(b *testing.B) {
		mc := minioClient(b, f.env.srv.Endpoint)
		ctx := ctxT(b, 5*time.Minute)
		b.SetBytes(f.logBytes)
		cpu0 := processCPU(b)
		for range b.N {
			var g errgroup.Group
			g.SetLimit(benchGetsInFlight)
			for _, s := range f.segs {
				key := tiering.ObjectKey(s, tiering.KindLog)
				for off := int64(0); off < s.Size; off += benchChunkBytes {
					g.Go(func() error {
						opts := minio.GetObjectOptions{}
						if err := opts.SetRange(off, min(off+benchChunkBytes, s.Size)-1); err != nil {
							return err
						}
						obj, err := mc.GetObject(ctx, f.env.bucket, key, opts)
						if err != nil {
							return err
						}
						defer obj.Close()
						n, err := io.Copy(io.Discard, obj)
						if err == nil && n != min(benchChunkBytes, s.Size-off) {
							err = fmt.Errorf("%d bytes", n)
						}
						if err != nil {
							return fmt.Errorf("GET %s [%d,+%d): %w", key, off, benchChunkBytes, err)
						}
						return nil
					})
				}
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((processCPU(b)-cpu0).Seconds()/(float64(f.logBytes)*float64(b.N)/1e9), "cpu-s/GB")
	})
}

// rawReplay reads partition 0 of topic from offset 0 to end with bare
// Fetch requests, one in flight, as the franz-go consumer sends them (8 MiB
// per partition, 32 MiB per response), and checks that the batches are
// contiguous from 0, reading only their headers: the client neither checks
// CRCs nor decodes records, as the plain GET peer only reads bytes.
func rawReplay(b *testing.B, ctx context.Context, cl *kgo.Client, topic string, end int64) {
	id, err := proctest.TopicID(ctx, cl, topic)
	if err != nil {
		b.Fatal(err)
	}
	next := int64(0)
	for next < end {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 4*benchChunkBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = next, benchChunkBytes, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := req.RequestWith(ctx, cl)
		if err != nil {
			b.Fatalf("fetch at %d: %v", next, err)
		}
		p := kresp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			b.Fatalf("fetch at %d: %v", next, kerr.ErrorForCode(p.ErrorCode))
		}
		err = batch.Split(p.RecordBatches, func(h *batch.Header, _ []byte) error {
			if h.LastOffset() < next || h.BaseOffset > next {
				return fmt.Errorf("batch [%d, %d] at fetch offset %d", h.BaseOffset, h.LastOffset(), next)
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU is the user+system CPU time of the test process so far: the
// node and its Kafka client in the replay, the minio-go client in the
// plain read (versitygw runs apart in both).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
