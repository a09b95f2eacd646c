package txntest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// etl runs a franz-go GroupTransactSession that copies every record of
// in to out (value "out-" + input value) in transactions, aborting every
// abortEvery-th one (0: never), until stop says so or ctx ends. It
// returns the number of transactions it ended. A session whose End
// failed is replaced, as a stream processor restarts its task (franz-go
// allows no Begin after a failed End): a transaction the coordinator
// aborted at its timeout while a node was down ends in PRODUCER_FENCED,
// which a loaded machine reaches (the chaos workload does the same).
func etl(ctx context.Context, seeds []string, id string, abortEvery int, stop func() bool, logf func(string, ...any)) (int, error) {
	connect := func() (*kgo.GroupTransactSession, error) {
		return kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.ConsumerGroup("etl"),
			kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("out"),
			kgo.TransactionTimeout(20*time.Second), kgo.SessionTimeout(6*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	s, err := connect()
	if err != nil {
		return 0, err
	}
	defer func() { s.Close() }()
	n, aborts := 0, 0
	defer func() { logf("%s: %d transactions, %d aborted", id, n, aborts) }()
	for !stop() && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := s.PollRecords(pctx, 20)
		cancel()
		if fs.IsClientClosed() {
			return n, nil
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return n, fmt.Errorf("begin: %w", err)
		}
		// Synchronously, so that an aborted transaction's records are
		// in the log (End aborts what is still buffered unsent).
		out := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			out[i] = &kgo.Record{Value: append([]byte("out-"), r.Value...), Partition: r.Partition}
		}
		// A failed output aborts the transaction: End(TryCommit) would
		// commit the consumed offsets without it (issue 17, chaos seed
		// 203; chaos.TestETLAbortsWhenAnOutputFails).
		produced := s.ProduceSync(ctx, out...).FirstErr()
		if produced != nil {
			logf("%s: produce: %v; aborting", id, produced)
		}
		n++
		try := kgo.TryCommit
		if produced != nil || abortEvery > 0 && n%abortEvery == 0 {
			try = kgo.TryAbort
			aborts++
		}
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		committed, err := s.End(ectx, try)
		cancel()
		if err != nil {
			logf("%s: End: %v (committed %v); replacing the session", id, err, committed)
			s.Close()
			if s, err = connect(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// checkEpochBumps asserts that the sessions ran transactions v2 (KIP-890
// part 2, which franz-go uses once transaction.version 2 is finalized):
// each end bumped its id's epoch, so the epoch is at least the number of
// transactions the session ended (under v1 only InitProducerId bumps it),
// and some session ended at least 3.
func checkEpochBumps(t *testing.T, ctx context.Context, cl *kgo.Client, ends map[string]int) {
	t.Helper()
	most := 0
	for id, n := range ends {
		most = max(most, n)
		var st kmsg.DescribeTransactionsResponseTransactionState
		if err := pollFor(30*time.Second, func() bool {
			st = describeTxn(t, ctx, cl, id)
			return !retriable(st.ErrorCode)
		}); err != nil || st.ErrorCode != 0 {
			t.Fatalf("DescribeTransactions %s: %v %+v", id, err, st)
		}
		if int(st.ProducerEpoch) < n {
			t.Errorf("%s ended %d transactions at epoch %d: not transactions v2", id, n, st.ProducerEpoch)
		}
	}
	if most < 3 {
		t.Errorf("the sessions ended at most %d transactions each: too few to tell v2 from v1", most)
	}
}

// TestGroupTransactSessionOneNode: a read-process-write pipeline of
// GroupTransactSessions on one node, aborting every second transaction and
// handing the group over from one session to two fresh ones midway,
// leaves every input's output committed exactly once in the output topic.
func TestGroupTransactSessionOneNode(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 120*time.Second)
	cl := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, ctx, cl, "in", 3, 1)
	createTopic(t, ctx, cl, "out", 3, 1)
	const total = 300
	want := map[string]bool{}
	produced := 0
	produceTo := func(n int) {
		t.Helper()
		for ; produced < n; produced++ {
			v := fmt.Sprintf("%d", produced)
			want["out-"+v] = true
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(produced % 3)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	committedOut := func() int { return countCommitted(ctx, cl, "out", 3) }
	ends := map[string]int{}
	// Two phases: one session alone until a third of the outputs are
	// committed, then two fresh ones, which start from the group's
	// committed offsets (the first phase's transactional commits) and
	// rebalance between them. Each phase's inputs are produced when it
	// starts, so that the first session cannot do the second phase's
	// work before it is stopped (it did, under the race detector: the
	// fresh sessions then had nothing to do and never got a producer id).
	for _, phase := range []struct {
		ids    []string
		target int
	}{{[]string{"etl-a"}, total / 3}, {[]string{"etl-b", "etl-c"}, total}} {
		done := make(chan struct{})
		stop := func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		}
		type result struct {
			id   string
			ends int
			err  error
		}
		results := make(chan result, len(phase.ids))
		produceTo(phase.target)
		for _, id := range phase.ids {
			go func() {
				ends, err := etl(ctx, []string{n.KafkaAddr()}, id, 2, stop, t.Logf)
				results <- result{id, ends, err}
			}()
		}
		err := pollFor(90*time.Second, func() bool { return committedOut() >= phase.target })
		close(done)
		for range phase.ids {
			r := <-results
			if r.err != nil {
				t.Error(r.err)
			}
			ends[r.id] += r.ends
		}
		if err != nil {
			t.Fatalf("the pipeline did not commit %d outputs in time (%d)", phase.target, committedOut())
		}
	}
	checkEpochBumps(t, ctx, cl, ends)
	aborted := checkExactlyOnce(t, ctx, cl, "out", 3, want)
	if aborted == 0 {
		t.Error("no aborted record in the output: the aborts did not run")
	}
	t.Logf("%d aborted records in the output log", aborted)
}
