package txntest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// startProcesses starts NATS in the test process and three `shale serve`
// processes (ids 1..3) with proctest's default flags (a 2 s broker session
// and controller lease, a 3 s replica.lag.time.max), and waits until the
// controller sees all three.
func startProcesses(t *testing.T) []*proctest.Node {
	t.Helper()
	c := proctest.StartCluster(t, shaleBin, []int32{1, 2, 3}, proctest.ClusterName("txntest"))
	return []*proctest.Node{c.Node(1), c.Node(2), c.Node(3)}
}

func createTopicConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
}

// TestExactlyOnceUnderKills: a read-process-write pipeline of two
// franz-go GroupTransactSessions copies a topic to another on three
// `shale serve` processes (replication factor 3, min.insync.replicas 2)
// while, in a bounded loop, one node at a time is killed (SIGKILL) and
// restarted once the pipeline made progress. At the end every input's
// output is committed exactly once, and nothing of an aborted
// transaction is committed (checked from the markers in the log, and by a
// read_committed consumer).
func TestExactlyOnceUnderKills(t *testing.T) {
	nodes := startProcesses(t)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.Kafka())
	}
	ctx := proctest.Context(t, 6*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	minISR := map[string]string{"min.insync.replicas": "2"}
	createTopicConfigs(t, ctx, cl, "in", 3, 3, minISR)
	createTopicConfigs(t, ctx, cl, "out", 3, 3, minISR)
	// The input arrives in four chunks: one before the pipeline starts,
	// one at each kill round, so that every round has work to do while
	// its node is down and after it restarted.
	const total, chunks = 600, 4
	want := map[string]bool{}
	var recs []*kgo.Record
	for i := range total {
		v := fmt.Sprintf("%d", i)
		want["out-"+v] = true
		recs = append(recs, &kgo.Record{Value: []byte(v), Partition: int32(i % 3)})
	}
	produceChunk := func(c int) {
		t.Helper()
		if err := cl.ProduceSync(ctx, recs[c*total/chunks:(c+1)*total/chunks]...).FirstErr(); err != nil {
			t.Fatalf("producing input chunk %d: %v", c, err)
		}
	}
	produceChunk(0)
	committedOut := func() int { return countCommitted(ctx, cl, "out", 3) }

	done := make(chan struct{})
	stop := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	var logMu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	var endsMu sync.Mutex
	ends := map[string]int{}
	for _, id := range []string{"etl-1", "etl-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := etl(ctx, seeds, id, 4, stop, logf)
			endsMu.Lock()
			ends[id] = n
			endsMu.Unlock()
			errs <- err
		}()
	}
	stopSessions := func() {
		close(done)
		wg.Wait()
		close(errs)
		for e := range errs {
			if e != nil {
				t.Error(e)
			}
		}
		logMu.Lock()
		for _, l := range lines {
			t.Log(l)
		}
		logMu.Unlock()
	}

	// Three rounds: new input, progress, kill one node, progress without
	// it (logged when the cluster cannot make it), restart it.
	for round := range chunks - 1 {
		produceChunk(round + 1)
		last := committedOut()
		if err := pollFor(60*time.Second, func() bool { return committedOut() >= last+total/chunks/10 }); err != nil {
			stopSessions()
			t.Fatalf("round %d: no progress before the kill (%d committed)", round, committedOut())
		}
		victim := nodes[round%3]
		victim.Kill()
		// The output's leaders move: read until the log answers again.
		if err := pollFor(30*time.Second, func() bool { last = committedOut(); return last >= 0 }); err != nil {
			stopSessions()
			t.Fatalf("round %d: the output is unreadable after the kill", round)
		}
		t.Logf("round %d: killed %s with %d committed", round, victim.Kafka(), last)
		// Progress while it is down, within the input produced so far: a
		// pipeline that had done it all before the kill has none to make
		// (it waited out the 60 s for it, a minute of make test).
		want := min(last+total/chunks/4, (round+2)*total/chunks)
		if err := pollFor(60*time.Second, func() bool { return committedOut() >= want }); err != nil {
			t.Logf("round %d: no progress while a node was down (%d committed)", round, committedOut())
		}
		victim.Start()
		victim.WaitReady()
		t.Logf("round %d: restarted with %d committed", round, committedOut())
	}
	err = pollFor(120*time.Second, func() bool { return committedOut() >= total })
	stopSessions()
	if err != nil {
		t.Fatalf("the pipeline committed %d of %d outputs", committedOut(), total)
	}
	// Transactions the sessions left open (a Close during one) are
	// aborted by their timeout.
	if err := pollFor(90*time.Second, func() bool {
		for p := range int32(3) {
			if v, err := readLog(ctx, cl, "out", p); err != nil || v.open > 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("transactions still open in the output")
	}
	checkEpochBumps(t, ctx, cl, ends)
	aborted := checkExactlyOnce(t, ctx, cl, "out", 3, want)
	t.Logf("%d aborted records in the output log", aborted)
	got := consumeAll(t, ctx, seeds[0], "out", kgo.ReadCommitted(), total)
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	if len(got) != total || len(seen) != total {
		t.Errorf("a read_committed consumer read %d records, %d distinct, want %d", len(got), len(seen), total)
	}
	for _, n := range nodes {
		n.CheckNoPanic()
	}
}
