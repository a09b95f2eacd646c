package sdk

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Transaction is one transactional id as its coordinator describes it
// (DescribeTransactions, KIP-664).
type Transaction struct {
	TransactionalID string
	Coordinator     int32
	State           string // Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMillis   int32
	StartTimestamp  int64              // unix ms of the ongoing transaction's start, -1 when none
	Partitions      map[string][]int32 // of the ongoing transaction
	Err             error              // this id could not be described
}

// ListedTransaction is one row of ListTransactions.
type ListedTransaction struct {
	TransactionalID string
	Coordinator     int32
	ProducerID      int64
	State           string
}

// ProducerState is one producer in a partition's producer state
// (DescribeProducers): CurrentTxnStartOffset is the first offset of its
// open transaction, -1 when none is open.
type ProducerState struct {
	Topic                 string
	Partition             int32
	Leader                int32
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64
}

// ErrNoOpenTransaction is returned by AbortTransaction when no producer
// has a transaction open at the given offset.
var ErrNoOpenTransaction = errors.New("sdk: no open transaction at that offset")

// ListTransactions lists the transactional ids of every broker, in the
// given states (all with none), sorted by id.
func (a *Admin) ListTransactions(ctx context.Context, states ...string) ([]ListedTransaction, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	lt, err := a.adm.ListTransactions(ctx, nil, states)
	if err != nil {
		return nil, fmt.Errorf("sdk: list transactions: %w", err)
	}
	out := []ListedTransaction{}
	for _, t := range lt.Sorted() {
		out = append(out, ListedTransaction{TransactionalID: t.TxnID, Coordinator: t.Coordinator, ProducerID: t.ProducerID, State: t.State})
	}
	return out, nil
}

// DescribeTransactions describes transactional ids, in the order given.
func (a *Admin) DescribeTransactions(ctx context.Context, ids ...string) ([]Transaction, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	dt, err := a.adm.DescribeTransactions(ctx, ids...)
	if err != nil && len(dt) == 0 {
		return nil, fmt.Errorf("sdk: describe transactions: %w", err)
	}
	out := make([]Transaction, 0, len(ids))
	for _, id := range ids {
		d, ok := dt[id]
		if !ok {
			out = append(out, Transaction{TransactionalID: id, Coordinator: -1, StartTimestamp: -1, Err: fmt.Errorf("sdk: transaction %s: no answer: %v", id, err)})
			continue
		}
		t := Transaction{TransactionalID: id, Coordinator: d.Coordinator, State: d.State, ProducerID: d.ProducerID,
			ProducerEpoch: d.ProducerEpoch, TimeoutMillis: d.TimeoutMillis, StartTimestamp: d.StartTimestamp,
			Partitions: map[string][]int32{}, Err: d.Err}
		for topic, ps := range d.Topics {
			for p := range ps {
				t.Partitions[topic] = append(t.Partitions[topic], p)
			}
			sort.Slice(t.Partitions[topic], func(i, j int) bool { return t.Partitions[topic][i] < t.Partitions[topic][j] })
		}
		out = append(out, t)
	}
	return out, nil
}

// DescribeProducers returns the producers of every partition of topic,
// sorted by partition and producer id, asking each partition's leader.
func (a *Admin) DescribeProducers(ctx context.Context, topic string) ([]ProducerState, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	info, err := a.DescribeTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for _, p := range info.Partitions {
		set.Add(topic, p.Partition)
	}
	dp, err := a.adm.DescribeProducers(ctx, set)
	if err != nil && len(dp) == 0 {
		return nil, fmt.Errorf("sdk: describe producers of %s: %w", topic, err)
	}
	out := []ProducerState{}
	for _, part := range dp[topic].Partitions.Sorted() {
		if part.Err != nil {
			return nil, fmt.Errorf("sdk: describe producers of %s-%d: %w", topic, part.Partition, part.Err)
		}
		for _, d := range part.ActiveProducers.Sorted() {
			out = append(out, ProducerState{Topic: topic, Partition: part.Partition, Leader: part.Leader, ProducerID: d.ProducerID,
				ProducerEpoch: d.ProducerEpoch, LastSequence: d.LastSequence, LastTimestamp: d.LastTimestamp,
				CoordinatorEpoch: d.CoordinatorEpoch, CurrentTxnStartOffset: d.CurrentTxnStartOffset})
		}
	}
	return out, nil
}

// AbortTransaction aborts the transaction open at startOffset in
// topic-partition (a hanging transaction, KIP-664): it finds the producer
// whose open transaction starts there and writes its ABORT marker to the
// partition's leader, as Kafka's kafka-transactions.sh abort does. It
// returns the producer it aborted; ErrNoOpenTransaction when none is open
// there.
func (a *Admin) AbortTransaction(ctx context.Context, topic string, partition int32, startOffset int64) (ProducerState, error) {
	producers, err := a.DescribeProducers(ctx, topic)
	if err != nil {
		return ProducerState{}, err
	}
	for _, p := range producers {
		if p.Partition != partition || p.CurrentTxnStartOffset != startOffset || startOffset < 0 {
			continue
		}
		set := kadm.TopicsSet{}
		set.Add(topic, partition)
		resp, err := a.adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
			CoordinatorEpoch: max(p.CoordinatorEpoch, 0), Topics: set})
		if err != nil {
			return p, fmt.Errorf("sdk: abort %s-%d at %d: %w", topic, partition, startOffset, err)
		}
		for _, r := range resp {
			for _, t := range r.Topics {
				for _, pr := range t.Partitions {
					if pr.Err != nil {
						return p, fmt.Errorf("sdk: abort %s-%d at %d: %w", topic, partition, startOffset, pr.Err)
					}
				}
			}
		}
		return p, nil
	}
	return ProducerState{}, fmt.Errorf("%w: %s-%d at %d", ErrNoOpenTransaction, topic, partition, startOffset)
}
