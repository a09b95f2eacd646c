package clustertest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
)

// Issue 24's elastic cluster: three nodes hold an RF=3 tiered topic of 12
// partitions whose history is mostly in the bucket and an RF=3 topic of 12
// partitions under an acks=all idempotent producer; three nodes start on
// empty disks, and the controller's balancer spreads replicas and leaders
// onto them; then `shale broker decommission` drains them again.

// elasticSize is one run's scale.
type elasticSize struct {
	histPerPartition int           // bytes of history written to each tiered partition
	segmentBytes     int           // the tiered topic's segment.bytes (local.retention.bytes is twice that)
	rate             int           // records a second of the live producer
	wait             time.Duration // how long each phase may take before the run fails
}

// elasticGoal is the bound on each phase.
const elasticGoal = 30 * time.Second

const (
	elasticHist = "hist"
	elasticLive = "live"
	elasticRec  = 1024 // bytes of a history record's value
)

// elasticResult are the two phases' times.
type elasticResult struct {
	scaleOut, drain time.Duration
}

// TestScaleOutAndDrain is the scenario at a size this shared
// machine bears in make test (about 6 MB of history, 200 records/s); the
// full size, 200 MB and 1000 records/s, is BenchmarkScaleOut. It asserts
// the end states (each new node hosts at least 11 of the 72 replicas and
// leads at least 3 of the 24 partitions, every ISR full, the new nodes
// hold no more than the local tails, no producer error, every record read
// back exactly once; then the drained nodes host nothing, exactly once
// again) and logs each phase's time beside the 30 s goal, which the bench
// holds it to.
func TestScaleOutAndDrain(t *testing.T) {
	r := runElastic(t, elasticSize{histPerPartition: 512 << 10, segmentBytes: 64 << 10, rate: 200, wait: 120 * time.Second})
	t.Logf("scale-out balanced in %v, drain in %v (goal %v each)", r.scaleOut, r.drain, elasticGoal)
}

// BenchmarkScaleOut is TestScaleOutAndDrain at the size: about
// 200 MB of history in the bucket and 1000 records/s. Reported: each
// phase's time (scale-out-ms, drain-ms), held against the 30 s goal by
// make bench. One iteration is the whole workload: run it with -benchtime
// 1x.
func BenchmarkScaleOut(b *testing.B) {
	for range b.N {
		r := runElastic(b, elasticSize{histPerPartition: 17 << 20, segmentBytes: 1 << 20, rate: 1000, wait: 180 * time.Second})
		b.ReportMetric(float64(r.scaleOut.Milliseconds()), "scale-out-ms")
		b.ReportMetric(float64(r.drain.Milliseconds()), "drain-ms")
		b.ReportMetric(0, "ns/op")
	}
}

func runElastic(t testing.TB, size elasticSize) elasticResult {
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	s3 := objstoretest.StartS3Server(t)
	bucket := s3.CreateBucket(t)
	c := proctest.NewCluster(t, shaleBin, proctest.ClusterName("elastic"), proctest.NodeFlags(
		"--s3-endpoint", s3.Endpoint, "--s3-bucket", bucket, "--s3-path-style", "--s3-region", objstoretest.Region,
		"--tiering-interval", "200ms"))
	c.Start(1, 2, 3)
	c.WaitBrokers(30*time.Second, 1, 2, 3)
	ctx := proctest.Context(t, 15*time.Minute)
	cl := c.Client()
	adm := kadm.NewClient(cl)

	seg := strconv.Itoa(size.segmentBytes)
	if _, err := adm.CreateTopic(ctx, 12, 3, map[string]*string{"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes": &seg, "local.retention.bytes": kadm.StringPtr(strconv.Itoa(2 * size.segmentBytes)),
		"min.insync.replicas": kadm.StringPtr("2")}, elasticHist); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 12, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, elasticLive); err != nil {
		t.Fatal(err)
	}

	// History: each tiered partition gets histPerPartition bytes.
	perPart := size.histPerPartition / elasticRec
	hp := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	pad := strings.Repeat("x", elasticRec-32)
	for p := range int32(12) {
		for i := 0; i < perPart; i += 500 {
			var recs []*kgo.Record
			for j := i; j < min(i+500, perPart); j++ {
				recs = append(recs, &kgo.Record{Topic: elasticHist, Partition: p, Value: []byte(fmt.Sprintf("h-%d-%d-%s", p, j, pad))})
			}
			if err := hp.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("history of %s-%d: %v", elasticHist, p, err)
			}
		}
	}
	// Mostly in the bucket: every replica's local log under half of it.
	var last string
	if err := proctest.WaitFor(size.wait, func() bool {
		sizes, err := logSizes(ctx, adm)
		if err != nil {
			last = err.Error()
			return false
		}
		for p := range int32(12) {
			for b, n := range sizes[elasticHist][p] {
				if n > int64(size.histPerPartition/2) {
					last = fmt.Sprintf("node %d holds %d bytes of %s-%d locally", b, n, elasticHist, p)
					return false
				}
			}
		}
		return true
	}); err != nil {
		t.Fatalf("history not moved to the bucket: %s", last)
	}

	live := startElasticProducer(t, c, size.rate)

	// Scale out: three nodes on empty disks.
	live.waitMore(t, size.rate, size.wait) // some traffic first; the producer runs throughout
	start := time.Now()
	c.Start(4, 5, 6)
	newNodes := []int32{4, 5, 6}
	if err := proctest.WaitFor(size.wait, func() bool {
		last = elasticSpread(ctx, adm, newNodes, 11, 3)
		return last == ""
	}); err != nil {
		t.Fatalf("scale-out not balanced after %v: %s", size.wait, last)
	}
	res := elasticResult{scaleOut: time.Since(start)}
	// The new nodes hold the local tails, not the history.
	sizes, err := logSizes(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(12) {
		var oldMax int64
		for b, n := range sizes[elasticHist][p] {
			if b <= 3 {
				oldMax = max(oldMax, n)
			}
		}
		for b, n := range sizes[elasticHist][p] {
			if b > 3 && (n > oldMax+int64(2*size.segmentBytes) || n > int64(size.histPerPartition/2)) {
				t.Errorf("new node %d holds %d bytes of %s-%d: more than the local tail (old replicas at most %d, history %d)",
					b, n, elasticHist, p, oldMax, size.histPerPartition)
			}
		}
	}
	// The controller's balancer metrics: at least the 33 moves the new
	// nodes' share takes, and the time it took.
	if err := proctest.WaitFor(30*time.Second, func() bool {
		var finished, bytes, took float64
		for _, id := range c.LiveIDs() {
			m := c.Node(id).Metrics()
			finished += m["shale_balancer_moves_finished_total"]
			bytes += m["shale_balancer_bytes_moved_total"]
			took = max(took, m["shale_balancer_time_to_balance_seconds"])
		}
		last = fmt.Sprintf("moves finished %v, bytes moved %v, time to balance %vs", finished, bytes, took)
		return finished >= 33 && bytes > 0 && took > 0
	}); err != nil {
		t.Fatalf("balancer metrics after the scale-out: %s", last)
	}
	live.waitMore(t, 2*size.rate, size.wait)
	checkElasticReadback(t, ctx, c, adm, live, perPart)

	// Drain the new nodes again.
	start = time.Now()
	out, err := exec.CommandContext(ctx, shaleBin, "broker", "decommission", "4", "5", "6", "--admin", c.Node(1).Admin()).CombinedOutput()
	if err != nil {
		t.Fatalf("shale broker decommission 4 5 6: %v: %s", err, out)
	}
	if err := proctest.WaitFor(size.wait, func() bool {
		last = elasticDrained(ctx, adm, newNodes)
		return last == ""
	}); err != nil {
		t.Fatalf("drain not done after %v: %s", size.wait, last)
	}
	res.drain = time.Since(start)
	live.waitMore(t, 2*size.rate, size.wait)
	live.stop()
	if errs := live.errors(); len(errs) > 0 {
		t.Fatalf("producer errors: %d, first %v", len(errs), errs[0])
	}
	checkElasticReadback(t, ctx, c, adm, live, perPart)
	c.CheckNoPanic()
	return res
}

// logSizes is every broker's local size of every partition
// (DescribeLogDirs): topic -> partition -> broker -> bytes.
func logSizes(ctx context.Context, adm *kadm.Client) (map[string]map[int32]map[int32]int64, error) {
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]map[int32]int64{}
	for b, dirs := range all {
		for _, d := range dirs {
			if d.Err != nil {
				return nil, fmt.Errorf("node %d: %w", b, d.Err)
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if out[p.Topic] == nil {
					out[p.Topic] = map[int32]map[int32]int64{}
				}
				if out[p.Topic][p.Partition] == nil {
					out[p.Topic][p.Partition] = map[int32]int64{}
				}
				out[p.Topic][p.Partition][b] = p.Size
			})
		}
	}
	return out, nil
}

// elasticSpread says what keeps the two topics from the balanced state
// (each of nodes hosting at least minReplicas of the 72 replicas and
// leading at least minLeaders of the 24 partitions, every ISR full, no
// reassignment in progress), or "".
func elasticSpread(ctx context.Context, adm *kadm.Client, nodes []int32, minReplicas, minLeaders int) string {
	td, err := adm.ListTopics(ctx, elasticHist, elasticLive)
	if err != nil {
		return err.Error()
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	set := kadm.TopicsSet{}
	for _, t := range []string{elasticHist, elasticLive} {
		for p, pd := range td[t].Partitions {
			set.Add(t, p)
			if len(pd.Replicas) != 3 || !sameSet(pd.Replicas, pd.ISR) {
				return fmt.Sprintf("%s-%d: replicas %v, ISR %v", t, p, pd.Replicas, pd.ISR)
			}
			for _, r := range pd.Replicas {
				replicas[r]++
			}
			leaders[pd.Leader]++
		}
	}
	for _, n := range nodes {
		if replicas[n] < minReplicas || leaders[n] < minLeaders {
			return fmt.Sprintf("node %d hosts %d replicas and leads %d partitions (replicas %v, leaders %v)", n, replicas[n], leaders[n], replicas, leaders)
		}
	}
	ra, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return err.Error()
	}
	if n := len(ra.Sorted()); n > 0 {
		return fmt.Sprintf("%d reassignments in progress", n)
	}
	return ""
}

// elasticDrained says what nodes still host or lead, in any topic, or
// whether an ISR is not full, or "".
func elasticDrained(ctx context.Context, adm *kadm.Client, nodes []int32) string {
	td, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return err.Error()
	}
	for _, t := range td.Sorted() {
		for _, pd := range t.Partitions.Sorted() {
			for _, r := range pd.Replicas {
				if slices.Contains(nodes, r) {
					return fmt.Sprintf("%s-%d: replicas %v", t.Topic, pd.Partition, pd.Replicas)
				}
			}
			if !sameSet(pd.Replicas, pd.ISR) {
				return fmt.Sprintf("%s-%d: replicas %v, ISR %v", t.Topic, pd.Partition, pd.Replicas, pd.ISR)
			}
		}
	}
	return ""
}

func sameSet(a, b []int32) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// elasticProducer writes sequence numbers to the live topic at a fixed
// rate, acks=all and idempotent (franz-go's default), and records what was
// acknowledged and every error.
type elasticProducer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  map[int64]kgo.Record // by sequence: where it was written
	sent   int64
	errs   []error
}

func startElasticProducer(t testing.TB, c *proctest.Cluster, rate int) *elasticProducer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &elasticProducer{cl: c.Client(kgo.DefaultProduceTopic(elasticLive), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.RecordDeliveryTimeout(60*time.Second)),
		cancel: cancel, done: make(chan struct{}), acked: map[int64]kgo.Record{}}
	const tick = 10 * time.Millisecond
	perTick := max(rate/100, 1)
	go func() {
		defer close(p.done)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		// Bounded: at most 30 minutes of records at the rate.
		for limit := int64(rate) * 1800; p.sent < limit; {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			for range perTick {
				seq := p.sent
				p.sent++
				p.cl.Produce(context.Background(), &kgo.Record{Value: []byte(strconv.FormatInt(seq, 10))}, func(r *kgo.Record, err error) {
					p.mu.Lock()
					defer p.mu.Unlock()
					if err != nil {
						p.errs = append(p.errs, fmt.Errorf("record %d: %w", seq, err))
						return
					}
					p.acked[seq] = kgo.Record{Partition: r.Partition, Offset: r.Offset}
				})
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// waitMore waits until n more records are acknowledged.
func (p *elasticProducer) waitMore(t testing.TB, n int, d time.Duration) {
	t.Helper()
	p.mu.Lock()
	want := len(p.acked) + n
	p.mu.Unlock()
	if err := proctest.WaitFor(d, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.acked) >= want
	}); err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("the producer got %d of %d acknowledgements; errors %d", len(p.acked), want, len(p.errs))
	}
}

// stop stops sending and waits for every record's outcome.
func (p *elasticProducer) stop() {
	p.cancel()
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p.cl.Flush(ctx) //nolint:errcheck // a record left over shows as missing
}

func (p *elasticProducer) errors() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errs)
}

// checkElasticReadback reads both topics from offset 0 to their high
// watermarks: every history record exactly once, every acknowledged live
// record below them exactly once and no live record twice.
func checkElasticReadback(t testing.TB, ctx context.Context, c *proctest.Cluster, adm *kadm.Client, live *elasticProducer, perPart int) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, elasticHist, elasticLive)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]kgo.Offset{}
	for _, topic := range []string{elasticHist, elasticLive} {
		want[topic] = map[int32]kgo.Offset{}
		for p := range int32(12) {
			want[topic][p] = kgo.NewOffset().AtStart()
		}
	}
	cons := c.Client(kgo.ConsumePartitions(want), kgo.FetchMaxWait(500*time.Millisecond))
	remaining := map[string]map[int32]int64{elasticHist: {}, elasticLive: {}}
	if err := ends.Error(); err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Topic][o.Partition] = o.Offset
		}
	})
	hist := map[string]int{}
	liveSeen := map[int64]int{}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for len(remaining[elasticHist])+len(remaining[elasticLive]) > 0 {
		fs := cons.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("read back: still to read %v", remaining)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := remaining[r.Topic][r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if r.Offset == end-1 {
				delete(remaining[r.Topic], r.Partition)
			}
			if r.Topic == elasticHist {
				hist[string(r.Value[:strings.LastIndexByte(string(r.Value), '-')])]++
				return
			}
			seq, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Fatalf("%s-%d@%d: value %q", r.Topic, r.Partition, r.Offset, r.Value)
			}
			liveSeen[seq]++
		})
	}
	for p := range 12 {
		for i := range perPart {
			if k := fmt.Sprintf("h-%d-%d", p, i); hist[k] != 1 {
				t.Fatalf("history record %s read %d times", k, hist[k])
			}
		}
	}
	if len(hist) != 12*perPart {
		t.Fatalf("%d distinct history records, want %d", len(hist), 12*perPart)
	}
	live.mu.Lock()
	defer live.mu.Unlock()
	for seq, n := range liveSeen {
		if n != 1 {
			t.Fatalf("live record %d read %d times", seq, n)
		}
	}
	for seq, at := range live.acked {
		if end := ends[elasticLive][at.Partition].Offset; at.Offset < end && liveSeen[seq] != 1 {
			t.Fatalf("acknowledged live record %d read %d times", seq, liveSeen[seq])
		}
	}
}
