package txn

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func meta(state kmsg.TransactionState, tps ...TopicPartition) *txnMeta {
	m := &txnMeta{id: "t", producerID: 7, prevProducerID: -1, epoch: 3, lastEpoch: 2, timeoutMs: 1000, state: state,
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
	if next, err := meta(kmsg.TransactionStateOngoing, a).addPartitions([]TopicPartition{a}, 200); next != nil || err != nil {
		t.Errorf("adding a partition already in the transaction writes %+v %v", next, err)
	}
	next, err := meta(kmsg.TransactionStateCompleteCommit, a).addPartitions([]TopicPartition{b}, 200)
	if err != nil || next.state != kmsg.TransactionStateOngoing || next.start != 200 || len(next.partitions) != 1 {
		t.Errorf("a new transaction: %+v %v", next, err)
	}
	if _, err := meta(kmsg.TransactionStatePrepareAbort, a).addPartitions([]TopicPartition{b}, 200); !errors.Is(err, ErrConcurrentTransactions) {
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
