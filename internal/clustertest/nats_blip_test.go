package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// Issue 24 item 3: a control plane that blips stops nothing. Three shale
// nodes on a 3-server NATS cluster run as processes (natsProcs), one RF=3
// topic with min.insync.replicas=2, and producers with acks=all and acks=1
// that never stop; the NATS servers are then paused, killed and restarted.

const (
	blipParts = 3
	// blipP999 bounds the producers' p999 latency across the faults. The
	// issue asks for 1 s; measured well below it (see the test logs), so
	// the bound is generous for a loaded 2-core machine and still fails
	// the code before the fix (31 s: every produce waited out the pause).
	blipP999 = 3 * time.Second
)

// blipCluster is the nodes, the NATS servers and the topic.
type blipCluster struct {
	t     *testing.T
	nats  *natsProcs
	nodes []*node
	topic string
}

func startBlipCluster(t *testing.T, topic string) *blipCluster {
	t.Helper()
	dir := t.TempDir()
	n := startNATSProcs(t, filepath.Join(dir, "nats"))
	c := &blipCluster{t: t, nats: n, topic: topic,
		nodes: startNodesInTurn(t, dir, n.URLs(), 3, "--nats-replicas", "3")}
	ctx := proctest.Context(t, time.Minute)
	two := "2"
	createInStep(ctx, t, c.nodes, 30*time.Second, topic, blipParts, map[string]*string{"min.insync.replicas": &two})
	c.waitFullISR(30 * time.Second)
	return c
}

// leadership is each partition's leader, leader epoch and ISR (sorted).
type leadership map[int32]string

// leadership returns what every node's Metadata says; the nodes must
// agree.
func (c *blipCluster) leadership(ctx context.Context) (leadership, error) {
	var first leadership
	for _, n := range c.nodes {
		v, err := viewFrom(ctx, n, c.topic, blipParts)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", n.id, err)
		}
		l := leadership{}
		for p, pd := range v.Partitions {
			isr := slices.Clone(pd.ISR)
			slices.Sort(isr)
			l[p] = fmt.Sprintf("leader %d epoch %d isr %v", pd.Leader, pd.Epoch, isr)
		}
		if first == nil {
			first = l
		} else if !mapsEqual(first, l) {
			return nil, fmt.Errorf("node %d says %v, node %d says %v", n.id, l, c.nodes[0].id, first)
		}
	}
	return first, nil
}

func mapsEqual(a, b leadership) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// waitFullISR waits until every partition's ISR holds the three nodes.
func (c *blipCluster) waitFullISR(d time.Duration) {
	c.t.Helper()
	ctx := proctest.Context(c.t, d+5*time.Second)
	var last string
	if err := proctest.WaitFor(d, func() bool {
		l, err := c.leadership(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		for p, s := range l {
			if !strings.HasSuffix(s, "isr [1 2 3]") {
				last = fmt.Sprintf("partition %d: %s", p, s)
				return false
			}
		}
		return true
	}); err != nil {
		c.t.Fatalf("ISRs not full: %s", last)
	}
}

// checkUnchanged fails the test unless every node reports before.
func (c *blipCluster) checkUnchanged(ctx context.Context, before leadership, when string) {
	c.t.Helper()
	after, err := c.leadership(ctx)
	if err != nil {
		c.t.Fatalf("%s: %v", when, err)
	}
	if !mapsEqual(before, after) {
		c.t.Fatalf("%s: leadership changed: before %v, after %v", when, before, after)
	}
}

// checkNoStepDown fails the test if a node stepped down or a controller
// elected a leader.
func (c *blipCluster) checkNoStepDown() {
	c.t.Helper()
	for _, n := range c.nodes {
		for _, line := range []string{"stepped down: control plane unreachable",
			"control plane lost for longer than the broker session; stepping down", "elected leader"} {
			if k := n.CountLines(line); k > 0 {
				c.t.Fatalf("node %d logged %q %d times:\n%s", n.id, line, k, n.Tail())
			}
		}
		n.CheckNoPanic()
	}
}

// blipProducer produces to the topic, round robin over its partitions,
// every interval (at most max records), and keeps every acknowledgement,
// error and latency.
type blipProducer struct {
	name   string
	cl     *kgo.Client
	phase  atomic.Value       // string: the prefix of the values produced now
	cancel context.CancelFunc // cancels the records still outstanding
	done   chan struct{}      // closed when the produce loop ended

	stopCh   chan struct{} // closed to end the produce loop
	stopLoop sync.Once

	mu struct {
		sync.Mutex
		acked   map[string][2]int64 // value -> partition, offset
		errs    []error
		latency map[string][]time.Duration // by phase
	}
}

func (c *blipCluster) startProducer(name string, acks kgo.Acks, interval time.Duration, max int) *blipProducer {
	c.t.Helper()
	var seeds []string
	for _, n := range c.nodes {
		seeds = append(seeds, n.Kafka())
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(c.topic), kgo.RequiredAcks(acks),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(90 * time.Second),
		kgo.ProducerLinger(0)}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &blipProducer{name: name, cl: cl, cancel: cancel, done: make(chan struct{}), stopCh: make(chan struct{})}
	p.mu.acked, p.mu.latency = map[string][2]int64{}, map[string][]time.Duration{}
	p.phase.Store("before")
	c.t.Cleanup(p.stop)
	go func() { // ends at stop or after max records
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := range max {
			select {
			case <-p.stopCh:
				return
			case <-tick.C:
			}
			phase := p.phase.Load().(string)
			v := fmt.Sprintf("%s-%s-%d", name, phase, i)
			start := time.Now()
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				took := time.Since(start)
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					if ctx.Err() == nil {
						p.mu.errs = append(p.mu.errs, fmt.Errorf("%s: %w", v, err))
					}
					return
				}
				p.mu.acked[v] = [2]int64{int64(r.Partition), r.Offset}
				p.mu.latency[phase] = append(p.mu.latency[phase], took)
			})
		}
	}()
	return p
}

// setPhase names the records produced from now on.
func (p *blipProducer) setPhase(phase string) { p.phase.Store(phase) }

// stop ends the produce loop and waits (up to 90 s) for every record
// produced to be answered. Idempotent.
func (p *blipProducer) stop() {
	p.stopLoop.Do(func() {
		close(p.stopCh)
		<-p.done
		fctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		_ = p.cl.Flush(fctx)
		cancel()
		p.cancel()
		p.cl.Close()
	})
}

// acks returns how many records produced in phase were acknowledged.
func (p *blipProducer) acks(phase string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.latency[phase])
}

// p999 returns the p999 latency of the records produced in phase and how
// many there were.
func (p *blipProducer) p999(phase string) (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ls := slices.Clone(p.mu.latency[phase])
	if len(ls) == 0 {
		return 0, 0
	}
	slices.Sort(ls)
	return ls[min(len(ls)-1, len(ls)*999/1000)], len(ls)
}

// checkNoErrors fails the test if any record failed.
func (p *blipProducer) checkNoErrors(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.errs) > 0 {
		t.Fatalf("producer %s: %d records failed, first: %v", p.name, len(p.mu.errs), p.mu.errs[0])
	}
}

// ackedRecords returns a copy of every acknowledged value's partition and
// offset.
func (p *blipProducer) ackedRecords() map[string][2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][2]int64, len(p.mu.acked))
	for k, v := range p.mu.acked {
		out[k] = v
	}
	return out
}

// blipConsumer reads the topic from its start on every node (leaders
// serve it) and counts the records read by phase.
type blipConsumer struct {
	cl   *kgo.Client
	done chan struct{}
	mu   struct {
		sync.Mutex
		read    map[string][2]int64
		byPhase map[string]int
	}
}

func (c *blipCluster) startConsumer() *blipConsumer {
	c.t.Helper()
	var seeds []string
	for _, n := range c.nodes {
		seeds = append(seeds, n.Kafka())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	bc := &blipConsumer{cl: cl, done: make(chan struct{})}
	bc.mu.read, bc.mu.byPhase = map[string][2]int64{}, map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(func() { cancel(); <-bc.done; cl.Close() })
	go func() { // ends at the test's end
		defer close(bc.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			bc.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				v := string(r.Value)
				bc.mu.read[v] = [2]int64{int64(r.Partition), r.Offset}
				if parts := strings.Split(v, "-"); len(parts) == 3 {
					bc.mu.byPhase[parts[1]]++
				}
			})
			bc.mu.Unlock()
		}
	}()
	return bc
}

// readIn returns how many records of phase were read.
func (bc *blipConsumer) readIn(phase string) int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.mu.byPhase[phase]
}

// checkAllRead waits up to d until every record the producers acknowledged
// was read at the partition and offset it was acknowledged at.
func (bc *blipConsumer) checkAllRead(t *testing.T, d time.Duration, ps ...*blipProducer) int {
	t.Helper()
	want := map[string][2]int64{}
	for _, p := range ps {
		for k, v := range p.ackedRecords() {
			want[k] = v
		}
	}
	var last string
	if err := proctest.Poll(d, 100*time.Millisecond, func() bool {
		bc.mu.Lock()
		defer bc.mu.Unlock()
		for k, v := range want {
			got, ok := bc.mu.read[k]
			if !ok {
				last = fmt.Sprintf("%s (acknowledged at %d/%d) not read", k, v[0], v[1])
				return false
			}
			if got != v {
				t.Fatalf("%s acknowledged at partition %d offset %d, read at %d/%d", k, v[0], v[1], got[0], got[1])
			}
		}
		return true
	}); err != nil {
		t.Fatalf("of %d acknowledged records: %s", len(want), last)
	}
	return len(want)
}

// TestNATSPausedLeadersKeepServing pauses (SIGSTOP) all three NATS servers
// for 12 s (30 s with proctest.LongEnv) under acks=all and acks=1 producers and a consumer. Nobody can
// elect another leader meanwhile, so the leaders must keep serving
// produce (both acks) and fetch, the ISR must stay as it is, and after the
// servers continue no leadership may have changed and every acknowledged
// record must read back where it was acknowledged. Before the fix every
// node stepped down one broker session into the pause ("control plane
// lost for longer than the broker session") and every produce waited for
// the servers to return.
func TestNATSPausedLeadersKeepServing(t *testing.T) {
	// 12 s is six broker sessions and six controller leases; 30 s, the
	// pause the issue measured, with proctest.LongEnv (make chaos).
	pause := proctest.Rounds(12*time.Second, 30*time.Second)
	// What the leaders must serve in the first pause-5s: 40 acks=all, 20
	// acks=1 records and 40 reads a second of it (the producers send at
	// most 500 and 250 a second).
	served := int((pause - 5*time.Second) / time.Second)
	c := startBlipCluster(t, "blippause")
	ctx := proctest.Context(t, 4*time.Minute)
	all := c.startProducer("all", kgo.AllISRAcks(), 2*time.Millisecond, 200_000)
	one := c.startProducer("one", kgo.LeaderAck(), 4*time.Millisecond, 100_000)
	cons := c.startConsumer()
	if err := proctest.WaitFor(30*time.Second, func() bool { return all.acks("before") > 500 && one.acks("before") > 200 }); err != nil {
		t.Fatalf("producers: %d and %d acknowledged before the pause", all.acks("before"), one.acks("before"))
	}
	before, err := c.leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.nats.pauseAll()
	paused := time.Now()
	all.setPhase("during")
	one.setPhase("during")
	// Well past the broker session (2 s) and the controller lease (2 s).
	time.Sleep(pause - 5*time.Second)
	aDuring, oDuring, rDuring := all.acks("during"), one.acks("during"), cons.readIn("during")
	c.checkUnchanged(ctx, before, "during the pause")
	time.Sleep(pause - time.Since(paused))
	c.nats.resumeAll()
	all.setPhase("after")
	one.setPhase("after")
	t.Logf("NATS paused for %v: %d acks=all and %d acks=1 records acknowledged and %d read in the first %v",
		time.Since(paused).Round(time.Millisecond), aDuring, oDuring, rDuring, pause-5*time.Second)
	// The leaders served while the servers were paused.
	if aDuring < 40*served || oDuring < 20*served || rDuring < 40*served {
		t.Fatalf("while NATS was paused: %d acks=all and %d acks=1 records acknowledged, %d read", aDuring, oDuring, rDuring)
	}
	// Long enough for every session and lease to be renewed after the
	// pause, and for a controller that misjudged them to act.
	if err := proctest.WaitFor(30*time.Second, func() bool { return all.acks("after") > 2000 }); err != nil {
		t.Fatalf("acks=all after the pause: %d", all.acks("after"))
	}
	time.Sleep(5 * time.Second)
	c.checkUnchanged(ctx, before, "after the pause")
	all.stop()
	one.stop()
	all.checkNoErrors(t)
	one.checkNoErrors(t)
	n := cons.checkAllRead(t, 60*time.Second, all, one)
	for _, p := range []*blipProducer{all, one} {
		for _, phase := range []string{"before", "during", "after"} {
			d, k := p.p999(phase)
			t.Logf("acks=%s %s the pause: p999 %v over %d records", p.name, phase, d.Round(time.Millisecond), k)
			if phase != "before" && d > blipP999 {
				t.Errorf("acks=%s %s the pause: p999 %v, want at most %v", p.name, phase, d.Round(time.Millisecond), blipP999)
			}
		}
	}
	t.Logf("read back all %d acknowledged records", n)
	c.checkNoStepDown()
	checkEpochs(t, c.nodes)
}

// TestNATSServerLossChangesNoLeader kills one NATS server of three with
// SIGKILL, and later restarts all three one by one, under an acks=all
// producer: the control plane loses a server (and the JetStream leaders it
// held, whose streams elect new ones), which must cost no leadership and
// no produce error. Every acknowledged record reads back where it was
// acknowledged.
func TestNATSServerLossChangesNoLeader(t *testing.T) {
	const down = 6 * time.Second // three broker sessions
	c := startBlipCluster(t, "blipkill")
	ctx := proctest.Context(t, 4*time.Minute)
	all := c.startProducer("all", kgo.AllISRAcks(), 2*time.Millisecond, 200_000)
	cons := c.startConsumer()
	if err := proctest.WaitFor(30*time.Second, func() bool { return all.acks("before") > 500 }); err != nil {
		t.Fatalf("producer: %d acknowledged before the faults", all.acks("before"))
	}
	before, err := c.leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}

	all.setPhase("kill")
	c.nats.kill(0)
	killed := time.Now()
	if err := proctest.WaitFor(30*time.Second, func() bool { return time.Since(killed) > down && all.acks("kill") > 1000 }); err != nil {
		t.Fatalf("acks=all with a NATS server killed: %d in %v", all.acks("kill"), time.Since(killed).Round(time.Millisecond))
	}
	c.checkUnchanged(ctx, before, "with a NATS server killed")
	c.nats.restart(0)
	c.nats.waitJetStream(60 * time.Second)
	t.Logf("NATS server 1 killed for %v", time.Since(killed).Round(time.Millisecond))

	all.setPhase("rolling")
	rolled := time.Now()
	for i := range 3 {
		c.nats.stop(i)
		stopped := all.acks("rolling")
		if err := proctest.WaitFor(30*time.Second, func() bool { return all.acks("rolling") > stopped+200 }); err != nil {
			t.Fatalf("acks=all with NATS server %d stopped: %d", i+1, all.acks("rolling")-stopped)
		}
		c.nats.restart(i)
		c.nats.waitJetStream(60 * time.Second)
	}
	t.Logf("rolling restart of the three NATS servers took %v", time.Since(rolled).Round(time.Millisecond))
	all.setPhase("after")
	if err := proctest.WaitFor(30*time.Second, func() bool { return all.acks("after") > 1000 }); err != nil {
		t.Fatalf("acks=all after the restarts: %d", all.acks("after"))
	}
	c.checkUnchanged(ctx, before, "after the NATS restarts")
	all.stop()
	all.checkNoErrors(t)
	n := cons.checkAllRead(t, 60*time.Second, all)
	for _, phase := range []string{"before", "kill", "rolling", "after"} {
		d, k := all.p999(phase)
		t.Logf("acks=all %s: p999 %v over %d records", phase, d.Round(time.Millisecond), k)
		if phase != "before" && d > blipP999 {
			t.Errorf("acks=all %s: p999 %v, want at most %v", phase, d.Round(time.Millisecond), blipP999)
		}
	}
	t.Logf("read back all %d acknowledged records", n)
	c.checkNoStepDown()
	checkEpochs(t, c.nodes)
}
