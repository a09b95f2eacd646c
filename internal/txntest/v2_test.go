package txntest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// endTxnV2 sends EndTxn v5 (transactions v2) and returns its answer.
func endTxnV2(t *testing.T, ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 5 {
		t.Fatalf("EndTxn went as v%d, want v5", resp.Version)
	}
	return resp
}

// TestCoordinatorStatesV2 walks one transactional id through transactions
// v2 (KIP-890 part 2) with raw requests, as franz-go and Kafka 4's client
// send them once ApiVersions finalizes transaction.version 2: Produce v12
// adds its partition to the transaction (no AddPartitionsToTxn), EndTxn v5
// bumps the epoch at each commit or abort and answers the new one, the
// markers carry the bumped epoch, a retried EndTxn at the previous epoch is
// answered as it was, an empty abort bumps, TxnOffsetCommit v5 adds the
// group's offsets partition itself, an older epoch is fenced, a timeout
// abort fences the producer's own EndTxn, and the state survives a
// restart.
func TestCoordinatorStatesV2(t *testing.T) {
	dir := t.TempDir()
	fastAborts := func(c *config.Broker) { c.TransactionAbortCheckInterval = 200 * time.Millisecond }
	n := testnode.Start(t, dir, fastAborts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close() }()
	ctx := proctest.Context(t, 90*time.Second)

	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	finalized := int16(-1)
	for _, f := range av.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = f.MaxVersionLevel
		}
	}
	if finalized != 2 {
		t.Fatalf("transaction.version finalized at %d by default, want 2: %+v", finalized, av.FinalizedFeatures)
	}
	createTopic(t, ctx, cl, "out", 2, 1)

	const id = "txn-v2"
	init := initPID(t, ctx, cl, id, -1, -1)
	if init.ErrorCode != 0 || init.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: %+v", init)
	}
	pid := init.ProducerID

	// Produce v12 adds out-0 to the transaction: nothing else did.
	if code := produceTxn(t, ctx, cl, id, pid, 0, "out", 0); code != 0 {
		t.Fatalf("Produce v12 of a partition not added: %v", kerr.ErrorForCode(code))
	}
	st := describeTxn(t, ctx, cl, id)
	if st.State != "Ongoing" || st.ProducerEpoch != 0 || len(st.Topics) != 1 || st.Topics[0].Topic != "out" ||
		len(st.Topics[0].Partitions) != 1 || st.Topics[0].Partitions[0] != 0 {
		t.Fatalf("after Produce v12: %+v", st)
	}

	// EndTxn v5 commits and bumps: the answer is the epoch to go on with.
	end := endTxnV2(t, ctx, cl, id, pid, 0, true)
	if end.ErrorCode != 0 || end.ProducerID != pid || end.ProducerEpoch != 1 {
		t.Fatalf("EndTxn v5 commit: %+v, want producer %d epoch 1", end, pid)
	}
	// Its retry, at the epoch the client had: the same answer once the
	// markers are written (CONCURRENT_TRANSACTIONS meanwhile); the
	// opposite outcome is INVALID_TXN_STATE.
	if err := pollFor(20*time.Second, func() bool {
		end = endTxnV2(t, ctx, cl, id, pid, 0, true)
		return end.ErrorCode != kerr.ConcurrentTransactions.Code
	}); err != nil || end.ErrorCode != 0 || end.ProducerID != pid || end.ProducerEpoch != 1 {
		t.Fatalf("the retried EndTxn: %v %+v", err, end)
	}
	if end := endTxnV2(t, ctx, cl, id, pid, 0, false); end.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("a retry with the opposite outcome: %+v", end)
	}
	if st = describeTxn(t, ctx, cl, id); st.State != "CompleteCommit" || st.ProducerEpoch != 1 {
		t.Fatalf("after the commit: %+v", st)
	}
	// The marker carries the bumped epoch.
	if ap := describeProducer(t, ctx, cl, "out", 0, pid); ap == nil || ap.ProducerEpoch != 1 || ap.CurrentTxnStartOffset != -1 {
		t.Fatalf("out-0 after the commit: %+v", ap)
	}
	// A zombie batch of the committed transaction, at epoch 0: fenced by
	// the coordinator when the leader adds its partition.
	if code := produceTxnSeq(t, ctx, cl, id, pid, 0, 1, "out", 1); code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("a batch at the epoch before the commit: %v", kerr.ErrorForCode(code))
	}
	if ap := describeProducer(t, ctx, cl, "out", 1, pid); ap != nil {
		t.Fatalf("the fenced batch left producer state in out-1: %+v", ap)
	}

	// An abort of a transaction that added nothing bumps too.
	if end := endTxnV2(t, ctx, cl, id, pid, 1, false); end.ErrorCode != 0 || end.ProducerEpoch != 2 {
		t.Fatalf("empty abort: %+v, want epoch 2", end)
	}
	waitState(t, ctx, cl, id, "CompleteAbort")

	// The next transaction at epoch 2: a partition by Produce v12 and the
	// group's offsets by TxnOffsetCommit v6 (no AddOffsetsToTxn), aborted.
	if code := produceTxn(t, ctx, cl, id, pid, 2, "out", 1); code != 0 {
		t.Fatalf("Produce v12 at epoch 2: %v", kerr.ErrorForCode(code))
	}
	const grp = "g-v2"
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = grp // creates __consumer_offsets
	if _, err := fc.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = id, grp, pid, 2, -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic, tt.TopicID = "out", topicIDOf(t, ctx, cl, "out") // by name to v5, by id from v6, as kgo sends it
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset = 0, 1
	tt.Partitions = append(tt.Partitions, tp)
	toc.Topics = append(toc.Topics, tt)
	var tresp *kmsg.TxnOffsetCommitResponse
	if err := pollFor(30*time.Second, func() bool {
		tresp, err = toc.RequestWith(ctx, cl)
		return err == nil && len(tresp.Topics) == 1 && !retriable(tresp.Topics[0].Partitions[0].ErrorCode)
	}); err != nil || tresp.Version < 5 || tresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit v5+: %v %+v", err, tresp)
	}
	st = describeTxn(t, ctx, cl, id)
	parts := map[string]int{}
	for _, tp := range st.Topics {
		parts[tp.Topic] += len(tp.Partitions)
	}
	if st.State != "Ongoing" || parts["out"] != 1 || parts[group.OffsetsTopic] != 1 {
		t.Fatalf("after Produce v12 and TxnOffsetCommit v5: %+v", st)
	}
	if end := endTxnV2(t, ctx, cl, id, pid, 2, false); end.ErrorCode != 0 || end.ProducerEpoch != 3 {
		t.Fatalf("abort: %+v, want epoch 3", end)
	}
	waitState(t, ctx, cl, id, "CompleteAbort")
	// Fencing by epoch: an end two epochs back is no retry.
	if end := endTxnV2(t, ctx, cl, id, pid, 1, false); end.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn two epochs back: %+v", end)
	}
	v, err := readLog(ctx, cl, "out", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.aborted) != 1 || len(v.committed) != 0 {
		t.Fatalf("out-1 after the abort: %+v", v)
	}

	// A timeout abort fences the producer: its EndTxn at its epoch is not
	// taken for the retry of an end.
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("txn-v2-timeout2"), 500
	var short *kmsg.InitProducerIDResponse
	if err := pollFor(30*time.Second, func() bool {
		short, err = req.RequestWith(ctx, cl)
		return err == nil && !retriable(short.ErrorCode)
	}); err != nil || short.ErrorCode != 0 {
		t.Fatalf("InitProducerId with a 500 ms timeout: %v %+v", err, short)
	}
	if code := produceTxn(t, ctx, cl, "txn-v2-timeout2", short.ProducerID, short.ProducerEpoch, "out", 0); code != 0 {
		t.Fatalf("Produce v12: %v", kerr.ErrorForCode(code))
	}
	waitState(t, ctx, cl, "txn-v2-timeout2", "CompleteAbort")
	if end := endTxnV2(t, ctx, cl, "txn-v2-timeout2", short.ProducerID, short.ProducerEpoch, false); end.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("the timed-out producer's abort: %+v, want PRODUCER_FENCED", end)
	}

	// The state survives a restart (value version 1 records).
	cl.Close()
	closeCtx, closeCancel := context.WithTimeout(ctx, 10*time.Second)
	n.Close(closeCtx)
	closeCancel()
	n = testnode.Start(t, dir, fastAborts)
	if cl, err = kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr())); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitFor(30*time.Second, func() bool {
		st = describeTxn(t, ctx, cl, id)
		return !retriable(st.ErrorCode)
	}); err != nil || st.State != "CompleteAbort" || st.ProducerID != pid || st.ProducerEpoch != 3 {
		t.Fatalf("after the restart: %v %+v", err, st)
	}
	if end := endTxnV2(t, ctx, cl, id, pid, 2, false); end.ErrorCode != 0 || end.ProducerEpoch != 3 {
		t.Fatalf("the retried abort after the restart: %+v", end)
	}
}

// TestTransactionalIDExpires: transactional.id.expiration.ms. An id with
// no transaction open and no change for longer than the expiration is
// removed (a tombstone in __transaction_state: gone after a restart too),
// and its next InitProducerId gets a new producer id; an id with a
// transaction open is kept.
func TestTransactionalIDExpires(t *testing.T) {
	dir := t.TempDir()
	expire := func(c *config.Broker) {
		c.TransactionalIDExpiration = 2 * time.Second
		c.TransactionIDExpirationCheckInterval = 200 * time.Millisecond
	}
	n := testnode.Start(t, dir, expire)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close() }()
	ctx := proctest.Context(t, 90*time.Second)
	createTopic(t, ctx, cl, "exp", 1, 1)
	idle := initPID(t, ctx, cl, "idle", -1, -1)
	busy := initPID(t, ctx, cl, "busy", -1, -1)
	if idle.ErrorCode != 0 || busy.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v %+v", idle, busy)
	}
	// busy keeps a transaction open (60 s timeout) past the expiration.
	if code := produceTxn(t, ctx, cl, "busy", busy.ProducerID, busy.ProducerEpoch, "exp", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	var st kmsg.DescribeTransactionsResponseTransactionState
	if err := pollFor(30*time.Second, func() bool {
		st = describeTxn(t, ctx, cl, "idle")
		return st.ErrorCode == kerr.TransactionalIDNotFound.Code
	}); err != nil {
		t.Fatalf("the idle id never expired: %+v", st)
	}
	if st = describeTxn(t, ctx, cl, "busy"); st.ErrorCode != 0 || st.State != "Ongoing" {
		t.Fatalf("the id with an open transaction: %+v", st)
	}
	cl.Close()
	closeCtx, closeCancel := context.WithTimeout(ctx, 10*time.Second)
	n.Close(closeCtx)
	closeCancel()
	n = testnode.Start(t, dir, expire)
	if cl, err = kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr())); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitFor(30*time.Second, func() bool {
		st = describeTxn(t, ctx, cl, "idle")
		return !retriable(st.ErrorCode)
	}); err != nil || st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("the expired id after a restart: %v %+v", err, st)
	}
	again := initPID(t, ctx, cl, "idle", -1, -1)
	if again.ErrorCode != 0 || again.ProducerID == idle.ProducerID || again.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId of the expired id: %+v, want a new producer id (was %d) at epoch 0", again, idle.ProducerID)
	}
}

// TestTransactionVersion1: with transaction_version 1 the feature is
// finalized at 1 and franz-go keeps transactions v1 (AddPartitionsToTxn,
// EndTxn v4): its commits and aborts leave the epoch where InitProducerId
// put it, and a read_committed consumer sees exactly the committed records.
// With the default (2) the same producer bumps the epoch at each end.
func TestTransactionVersion1(t *testing.T) {
	for _, tc := range []struct {
		level     int16
		wantEpoch int16 // after InitProducerId (0) and four ends
	}{{1, 0}, {2, 4}} {
		t.Run(fmt.Sprintf("transaction.version=%d", tc.level), func(t *testing.T) {
			n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.TransactionVersion = tc.level })
			ctx := proctest.Context(t, 90*time.Second)
			admin := testnode.Client(t, n.KafkaAddr())
			av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			// transaction.version at the configured level, beside the other
			// features built (group.version, share.version).
			i := slices.IndexFunc(av.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool { return f.Name == "transaction.version" })
			if i < 0 || av.FinalizedFeatures[i].MaxVersionLevel != tc.level || av.FinalizedFeatures[i].MinVersionLevel != tc.level {
				t.Fatalf("finalized features %+v, want transaction.version %d", av.FinalizedFeatures, tc.level)
			}
			createTopic(t, ctx, admin, "tv", 2, 1)
			id := fmt.Sprintf("tv-%d", tc.level)
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID(id), kgo.DefaultProduceTopic("tv"),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var committed []string
			for round := range 4 {
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				commit := round%2 == 0
				for i := range 4 {
					v := fmt.Sprintf("r%d-%d", round, i)
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(i % 2)}).FirstErr(); err != nil {
						t.Fatalf("produce %s: %v", v, err)
					}
					if commit {
						committed = append(committed, v)
					}
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatalf("EndTransaction(%v): %v", commit, err)
				}
			}
			waitState(t, ctx, admin, id, "CompleteAbort")
			if st := describeTxn(t, ctx, admin, id); st.ProducerEpoch != tc.wantEpoch {
				t.Fatalf("epoch %d after four ends, want %d: %+v", st.ProducerEpoch, tc.wantEpoch, st)
			}
			got := consumeAll(t, ctx, n.KafkaAddr(), "tv", kgo.ReadCommitted(), len(committed))
			seen := map[string]bool{}
			for _, v := range got {
				seen[v] = true
			}
			if len(got) != len(committed) || len(seen) != len(committed) {
				t.Fatalf("read_committed read %v, want %v", got, committed)
			}
			for _, v := range committed {
				if !seen[v] {
					t.Fatalf("read_committed missed %s: %v", v, got)
				}
			}
		})
	}
}
