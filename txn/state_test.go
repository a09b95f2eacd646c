package txn

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/partition"
)

func meta(state kmsg.TransactionState, tps ...TopicPartition) *txnMeta {
	m := &txnMeta{id: "t", producerID: 7, prevProducerID: -1, nextProducerID: -1, epoch: 3, lastEpoch: 2, timeoutMs: 1000, state: state,
		partitions: map[TopicPartition]struct{}{}, start: 100, lastUpdate: 100}
	for _, tp := range tps {
		m.partitions[tp] = struct{}{}
	}
	return m
}

// TestRecordRoundTrip: a state written is the state read back.
func TestRecordRoundTrip(t *testing.T) {
	m := meta(kmsg.TransactionStateOngoing, TopicPartition{"b", 1}, TopicPartition{"a", 2}, TopicPartition{"a", 0})
	id, err := decodeStateKey(stateKey("t"))
	if err != nil || id != "t" {
		t.Fatalf("key: %q %v", id, err)
	}
	got, err := decodeStateValue(id, stateValue(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.producerID != 7 || got.epoch != 3 || got.timeoutMs != 1000 || got.state != kmsg.TransactionStateOngoing ||
		got.start != 100 || got.lastUpdate != 100 || len(got.partitions) != 3 {
		t.Fatalf("read back %+v", got)
	}
	for tp := range m.partitions {
		if _, ok := got.partitions[tp]; !ok {
			t.Errorf("lost %v", tp)
		}
	}
	if _, err := decodeStateKey([]byte{0, 1, 0, 1, 't'}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("key version 1: %v", err)
	}
	if _, err := decodeStateValue("t", []byte{0, 0, 1}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("short value: %v", err)
	}
}

// TestTransitions: Kafka's answers to AddPartitionsToTxn and EndTxn in
// each state.
func TestTransitions(t *testing.T) {
	a := TopicPartition{"a", 0}
	for _, c := range []struct {
		state   kmsg.TransactionState
		commit  bool
		want    kmsg.TransactionState // the state written; 0 with noWrite
		noWrite bool
		err     error
	}{
		{state: kmsg.TransactionStateOngoing, commit: true, want: kmsg.TransactionStatePrepareCommit},
		{state: kmsg.TransactionStateOngoing, commit: false, want: kmsg.TransactionStatePrepareAbort},
		{state: kmsg.TransactionStateCompleteCommit, commit: true, noWrite: true},
		{state: kmsg.TransactionStateCompleteCommit, commit: false, err: ErrInvalidTxnState},
		{state: kmsg.TransactionStateCompleteAbort, commit: false, noWrite: true},
		{state: kmsg.TransactionStateCompleteAbort, commit: true, err: ErrInvalidTxnState},
		{state: kmsg.TransactionStatePrepareCommit, commit: true, err: ErrConcurrentTransactions},
		{state: kmsg.TransactionStatePrepareCommit, commit: false, err: ErrInvalidTxnState},
		{state: kmsg.TransactionStatePrepareAbort, commit: false, err: ErrConcurrentTransactions},
		{state: kmsg.TransactionStateEmpty, commit: true, err: ErrInvalidTxnState},
	} {
		next, err := meta(c.state, a).end(c.commit)
		switch {
		case c.err != nil:
			if !errors.Is(err, c.err) {
				t.Errorf("end(%v) in %s: %v, want %v", c.commit, c.state, err, c.err)
			}
		case c.noWrite:
			if err != nil || next != nil {
				t.Errorf("end(%v) in %s: %v %v, want no write", c.commit, c.state, next, err)
			}
		case err != nil || next == nil || next.state != c.want || len(next.partitions) != 1:
			t.Errorf("end(%v) in %s: %+v %v, want %s", c.commit, c.state, next, err, c.want)
		}
	}

	b := TopicPartition{"b", 0}
	if next, err := meta(kmsg.TransactionStateOngoing, a).addPartitions([]TopicPartition{a}, 200, 0); next != nil || err != nil {
		t.Errorf("adding a partition already in the transaction writes %+v %v", next, err)
	}
	next, err := meta(kmsg.TransactionStateCompleteCommit, a).addPartitions([]TopicPartition{b}, 200, 0)
	if err != nil || next.state != kmsg.TransactionStateOngoing || next.start != 200 || len(next.partitions) != 1 {
		t.Errorf("a new transaction: %+v %v", next, err)
	}
	if _, err := meta(kmsg.TransactionStatePrepareAbort, a).addPartitions([]TopicPartition{b}, 200, 0); !errors.Is(err, ErrConcurrentTransactions) {
		t.Errorf("adding while aborting: %v", err)
	}
	done := meta(kmsg.TransactionStatePrepareCommit, a).completed()
	if done.state != kmsg.TransactionStateCompleteCommit || len(done.partitions) != 0 {
		t.Errorf("completed: %+v", done)
	}
}

// TestProducerChecks: fencing and KIP-360's previous epoch.
func TestProducerChecks(t *testing.T) {
	m := meta(kmsg.TransactionStateOngoing)
	if err := m.checkProducer(7, 2); !errors.Is(err, ErrProducerFenced) {
		t.Errorf("older epoch: %v", err)
	}
	if err := m.checkProducer(8, 3); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Errorf("other producer id: %v", err)
	}
	var none *txnMeta
	if err := none.checkProducer(7, 3); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Errorf("unknown id: %v", err)
	}
	if !m.validProducer(7, 3) || !m.validProducer(7, 2) || m.validProducer(7, 1) || m.validProducer(9, 3) || !m.validProducer(-1, -1) {
		t.Error("KIP-360: the current and the previous epoch are valid, nothing else")
	}
	f := m.fenceAndAbort()
	if f.epoch != 4 || f.lastEpoch != 3 || f.state != kmsg.TransactionStatePrepareAbort {
		t.Errorf("fenceAndAbort: %+v", f)
	}
	m.epoch = math.MaxInt16 - 1
	if _, ok := m.bumped(-1); ok {
		t.Error("an exhausted epoch bumps without a new producer id")
	}
	n, ok := m.bumped(99)
	if !ok || n.producerID != 99 || n.epoch != 0 || n.prevProducerID != 7 {
		t.Errorf("exhausted epoch: %+v", n)
	}
}

// TestEndV2: Kafka's EndTxn table for transactions v2 (EndTxn v5): each
// end bumps the epoch, the epoch before the current one is a retry, an
// empty abort is served, and an exhausted epoch moves to a new producer id.
func TestEndV2(t *testing.T) {
	a := TopicPartition{"a", 0}
	type want struct {
		state   kmsg.TransactionState // written; 0 with noWrite
		noWrite bool
		err     error
	}
	for _, c := range []struct {
		state  kmsg.TransactionState
		retry  bool // the request is at epoch 2, the state at 3
		commit bool
		want   want
	}{
		{state: kmsg.TransactionStateOngoing, commit: true, want: want{state: kmsg.TransactionStatePrepareCommit}},
		{state: kmsg.TransactionStateOngoing, commit: false, want: want{state: kmsg.TransactionStatePrepareAbort}},
		{state: kmsg.TransactionStateOngoing, retry: true, commit: true, want: want{err: ErrProducerFenced}},
		{state: kmsg.TransactionStateEmpty, commit: false, want: want{state: kmsg.TransactionStatePrepareAbort}},
		{state: kmsg.TransactionStateEmpty, commit: true, want: want{err: ErrInvalidTxnState}},
		{state: kmsg.TransactionStateEmpty, retry: true, commit: false, want: want{err: ErrProducerFenced}},
		{state: kmsg.TransactionStateCompleteAbort, retry: true, commit: false, want: want{noWrite: true}},
		{state: kmsg.TransactionStateCompleteAbort, retry: true, commit: true, want: want{err: ErrInvalidTxnState}},
		{state: kmsg.TransactionStateCompleteAbort, commit: false, want: want{state: kmsg.TransactionStatePrepareAbort}},
		{state: kmsg.TransactionStateCompleteAbort, commit: true, want: want{err: ErrInvalidTxnState}},
		{state: kmsg.TransactionStateCompleteCommit, retry: true, commit: true, want: want{noWrite: true}},
		{state: kmsg.TransactionStateCompleteCommit, retry: true, commit: false, want: want{err: ErrInvalidTxnState}},
		{state: kmsg.TransactionStateCompleteCommit, commit: false, want: want{state: kmsg.TransactionStatePrepareAbort}},
		{state: kmsg.TransactionStateCompleteCommit, commit: true, want: want{err: ErrInvalidTxnState}},
		{state: kmsg.TransactionStatePrepareCommit, retry: true, commit: true, want: want{err: ErrConcurrentTransactions}},
		{state: kmsg.TransactionStatePrepareCommit, retry: true, commit: false, want: want{err: ErrInvalidTxnState}},
		{state: kmsg.TransactionStatePrepareCommit, commit: true, want: want{err: ErrProducerFenced}},
		{state: kmsg.TransactionStatePrepareAbort, retry: true, commit: false, want: want{err: ErrConcurrentTransactions}},
	} {
		m := meta(c.state, a)
		epoch := m.epoch
		if c.retry {
			epoch--
		}
		next, err := m.endV2(7, epoch, c.commit, -1, 500)
		name := fmt.Sprintf("%s retry=%v commit=%v", c.state, c.retry, c.commit)
		switch {
		case c.want.err != nil:
			if !errors.Is(err, c.want.err) {
				t.Errorf("%s: %v, want %v", name, err, c.want.err)
			}
		case c.want.noWrite:
			if err != nil || next != nil {
				t.Errorf("%s: %+v %v, want no write", name, next, err)
			}
		case err != nil || next == nil || next.state != c.want.state || next.epoch != 4 || next.lastEpoch != 3 || next.clientTV != 2 || next.markerTV != 2:
			t.Errorf("%s: %+v %v, want %s at epoch 4", name, next, err, c.want.state)
		case c.state != kmsg.TransactionStateOngoing && (len(next.partitions) != 0 || next.start != 500):
			t.Errorf("%s: an empty abort keeps partitions %v, start %d", name, next.partitions, next.start)
		}
	}
	if _, err := meta(kmsg.TransactionStateOngoing).endV2(8, 3, true, -1, 0); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Errorf("another producer id: %v", err)
	}
	var none *txnMeta
	if _, err := none.endV2(7, 3, true, -1, 0); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Errorf("unknown id: %v", err)
	}

	// The epoch runs out: the Prepare state is at 32767 with the next
	// producer id, which the completed state and the client move to.
	m := meta(kmsg.TransactionStateOngoing, a)
	m.epoch = math.MaxInt16 - 1
	if _, err := m.endV2(7, m.epoch, true, -1, 0); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("exhausted without a new producer id: %v", err)
	}
	p, err := m.endV2(7, m.epoch, true, 99, 0)
	if err != nil || p.epoch != math.MaxInt16 || p.nextProducerID != 99 {
		t.Fatalf("exhausted: %+v %v", p, err)
	}
	if pid, epoch := p.nextProducer(); pid != 99 || epoch != 0 {
		t.Fatalf("the client continues with %d/%d", pid, epoch)
	}
	done := p.completed()
	if done.producerID != 99 || done.epoch != 0 || done.prevProducerID != 7 || done.nextProducerID != -1 ||
		done.state != kmsg.TransactionStateCompleteCommit {
		t.Fatalf("completed after the rollover: %+v", done)
	}
	// The retry of that end comes with the old id at the last epoch.
	if next, err := done.endV2(7, math.MaxInt16-1, true, -1, 0); err != nil || next != nil {
		t.Fatalf("retry after the rollover: %+v %v", next, err)
	}
	if _, err := done.endV2(7, math.MaxInt16-1, false, -1, 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("opposite retry after the rollover: %v", err)
	}
	// The state survives its record, tags included.
	got, err := decodeStateValue("t", stateValue(p))
	if err != nil || got.nextProducerID != 99 || got.clientTV != 2 || got.epoch != math.MaxInt16 {
		t.Fatalf("v1 record read back: %+v %v", got, err)
	}
	got, err = decodeStateValue("t", stateValue(meta(kmsg.TransactionStateOngoing)))
	if err != nil || got.nextProducerID != -1 || got.prevProducerID != -1 || got.clientTV != 0 {
		t.Fatalf("v0 record read back: %+v %v", got, err)
	}

	// A timeout abort of a v2 transaction bumps twice: the producer's
	// EndTxn at its epoch is then fenced, not taken for a retry.
	v2 := meta(kmsg.TransactionStateOngoing, a)
	v2.clientTV = 2
	f := v2.fenceAndAbort().completed()
	if f.epoch != 5 {
		t.Fatalf("fenced v2 epoch %d, want 5", f.epoch)
	}
	if _, err := f.endV2(7, 3, false, -1, 0); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("the fenced producer's abort: %v", err)
	}
}

// TestMarkerTransactionVersion: the markers of a transactions v2 end, and
// of a v2 fence that bumps the epoch, say version 2 (KIP-1228: the
// partition takes them only above the producer's epoch there); a v1 end,
// a v1 fence and a v2 fence at an exhausted epoch (not bumped: its markers
// are at the producer's epoch) say 0, and a completed state carries none.
// Shale's coordinator sent 0 for every marker before.
func TestMarkerTransactionVersion(t *testing.T) {
	a := TopicPartition{"a", 0}
	v1 := meta(kmsg.TransactionStateOngoing, a)
	v2 := meta(kmsg.TransactionStateOngoing, a)
	v2.clientTV = 2
	end1, err := v1.end(true)
	if err != nil || end1.markerTV != 0 {
		t.Fatalf("v1 end: %+v %v", end1, err)
	}
	end2, err := v2.endV2(7, v2.epoch, true, -1, 0)
	if err != nil || end2.markerTV != 2 {
		t.Fatalf("v2 end: %+v %v", end2, err)
	}
	if done := end2.completed(); done.markerTV != 0 {
		t.Fatalf("completed: marker version %d", done.markerTV)
	}
	if f := v1.fenceAndAbort(); f.markerTV != 0 || f.epoch != v1.epoch+1 {
		t.Fatalf("v1 fence: %+v", f)
	}
	if f := v2.fenceAndAbort(); f.markerTV != 2 || f.epoch != v2.epoch+2 {
		t.Fatalf("v2 fence: %+v", f)
	}
	x := v2.clone()
	x.epoch = math.MaxInt16 - 1
	if f := x.fenceAndAbort(); f.markerTV != 0 || f.epoch != x.epoch {
		t.Fatalf("v2 fence at an exhausted epoch: %+v", f)
	}
	// A Prepare state read back from its record (a new coordinator) says 0.
	got, err := decodeStateValue("t", stateValue(end2))
	if err != nil || got.markerTV != 0 {
		t.Fatalf("loaded Prepare state: %+v %v", got, err)
	}
}

// TestErrorCodes: the transaction coordinator's codes put its own errors
// and the runtime's over the node's table, each wrapped as the coordinator
// wraps it.
func TestErrorCodes(t *testing.T) {
	for err, want := range map[error]*kerr.Error{
		ErrLoadInProgress: kerr.CoordinatorLoadInProgress,
		ErrClosed:         kerr.NotCoordinator,
		fmt.Errorf("%w: aborting the open transaction of %q first", ErrConcurrentTransactions, "tx"): kerr.ConcurrentTransactions,
		ErrProducerFenced:           kerr.ProducerFenced,
		ErrInvalidProducerIDMapping: kerr.InvalidProducerIDMapping,
		ErrInvalidTxnState:          kerr.InvalidTxnState,
		ErrInvalidTimeout:           kerr.InvalidTransactionTimeout,
		ErrNotFound:                 kerr.TransactionalIDNotFound,
		ErrInvalidRequest:           kerr.InvalidRequest,
		fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, StateTopic, 3, partition.ErrDiskFull): kerr.NotCoordinator,
		fmt.Errorf("%w: %w", ErrNotCoordinator, partition.ErrNotLeader):                                   kerr.NotCoordinator,
		fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, partition.ErrNotEnoughReplicas):                  kerr.CoordinatorNotAvailable,
	} {
		if got := ErrorCode(err); got != want.Code {
			t.Errorf("ErrorCode(%v) = %v, want %v", err, kerr.ErrorForCode(got), want)
		}
	}
}
