package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnMeta is one transactional id's state, as in Kafka's
// TransactionMetadata. A value in a shard's map is never modified: a
// transition builds a new one (clone) that replaces it once its record is
// replicated.
type txnMeta struct {
	id         string
	producerID int64
	// prevProducerID is the producer id before the last exhaustion of
	// the epoch (KIP-360), -1 when none; memory only.
	prevProducerID int64
	epoch          int16
	// lastEpoch is the epoch before the last bump, -1 when none: a
	// producer retrying InitProducerId with it after a timeout abort is
	// still recognised (KIP-360); memory only, as in Kafka.
	lastEpoch  int16
	timeoutMs  int32
	state      kmsg.TransactionState
	partitions map[TopicPartition]struct{}
	start      int64 // the transaction's start, unix ms; -1 when none
	lastUpdate int64 // unix ms
}

func (m *txnMeta) clone() *txnMeta {
	n := *m
	n.partitions = make(map[TopicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		n.partitions[tp] = struct{}{}
	}
	return &n
}

// epochExhausted: the epoch cannot be bumped; the next bump takes a new
// producer id.
func (m *txnMeta) epochExhausted() bool { return m.epoch >= math.MaxInt16-1 }

// validProducer is Kafka's isValidProducerId for InitProducerId with a
// producer id and epoch (KIP-360): the current id with the current or the
// previous epoch, or the previous id with its last epoch.
func (m *txnMeta) validProducer(pid int64, epoch int16) bool {
	if pid < 0 {
		return true
	}
	if pid == m.producerID {
		return epoch == m.epoch || (m.lastEpoch >= 0 && epoch == m.lastEpoch)
	}
	return pid == m.prevProducerID && m.prevProducerID >= 0
}

// checkProducer is the check of AddPartitionsToTxn, AddOffsetsToTxn,
// EndTxn and TxnOffsetCommit: the id's producer at its current epoch.
func (m *txnMeta) checkProducer(pid int64, epoch int16) error {
	switch {
	case m == nil || m.producerID != pid:
		return ErrInvalidProducerIDMapping
	case m.epoch != epoch:
		return ErrProducerFenced
	}
	return nil
}

// bumped is m with its epoch bumped (or a new producer id newPID at epoch
// 0 when the epoch is exhausted; newPID < 0 then means none is at hand).
func (m *txnMeta) bumped(newPID int64) (*txnMeta, bool) {
	n := m.clone()
	if m.epochExhausted() {
		if newPID < 0 {
			return nil, false
		}
		n.prevProducerID, n.producerID, n.epoch, n.lastEpoch = m.producerID, newPID, 0, -1
		return n, true
	}
	n.lastEpoch, n.epoch = m.epoch, m.epoch+1
	return n, true
}

// addPartitions is the transition of AddPartitionsToTxn and
// AddOffsetsToTxn: nil when every partition is already in the ongoing
// transaction (nothing to write).
func (m *txnMeta) addPartitions(tps []TopicPartition, now int64) (*txnMeta, error) {
	switch m.state {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		return nil, ErrConcurrentTransactions
	case kmsg.TransactionStateOngoing:
		all := true
		for _, tp := range tps {
			if _, ok := m.partitions[tp]; !ok {
				all = false
				break
			}
		}
		if all {
			return nil, nil
		}
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
	default:
		return nil, ErrInvalidTxnState
	}
	n := m.clone()
	if m.state != kmsg.TransactionStateOngoing {
		n.partitions = map[TopicPartition]struct{}{}
		n.start = now
	}
	for _, tp := range tps {
		n.partitions[tp] = struct{}{}
	}
	n.state = kmsg.TransactionStateOngoing
	return n, nil
}

// end is the transition of EndTxn: nil when the request repeats what
// already happened (a retried EndTxn), as Kafka answers it.
func (m *txnMeta) end(commit bool) (*txnMeta, error) {
	prepare, complete := kmsg.TransactionStatePrepareAbort, kmsg.TransactionStateCompleteAbort
	if commit {
		prepare, complete = kmsg.TransactionStatePrepareCommit, kmsg.TransactionStateCompleteCommit
	}
	switch m.state {
	case kmsg.TransactionStateOngoing:
		n := m.clone()
		n.state = prepare
		return n, nil
	case complete:
		return nil, nil
	case prepare:
		return nil, ErrConcurrentTransactions
	}
	return nil, ErrInvalidTxnState
}

// completed is the state after the markers of a Prepare state are written.
func (m *txnMeta) completed() *txnMeta {
	n := m.clone()
	n.state = kmsg.TransactionStateCompleteAbort
	if m.state == kmsg.TransactionStatePrepareCommit {
		n.state = kmsg.TransactionStateCompleteCommit
	}
	n.partitions = map[TopicPartition]struct{}{}
	return n
}

// preparing reports whether m waits for its markers.
func (m *txnMeta) preparing() bool {
	return m.state == kmsg.TransactionStatePrepareCommit || m.state == kmsg.TransactionStatePrepareAbort
}

// fenceAndAbort is the transition that aborts an ongoing transaction for
// another producer or a timeout: the epoch is bumped (when it can be) so
// that the old producer is fenced, then the abort is prepared.
func (m *txnMeta) fenceAndAbort() *txnMeta {
	n := m.clone()
	if !m.epochExhausted() {
		n.lastEpoch, n.epoch = m.epoch, m.epoch+1
	}
	n.state = kmsg.TransactionStatePrepareAbort
	return n
}
