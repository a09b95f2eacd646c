package txn

import (
	"fmt"
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
	lastEpoch int16
	// nextProducerID is the producer id a transactions v2 end whose epoch
	// ran out moves to once complete (KIP-890 part 2), -1 when none.
	nextProducerID int64
	// clientTV is the transaction version of the client's last
	// transaction: 2 for transactions v2 (EndTxn v5, Produce v12,
	// TxnOffsetCommit v5), 0 before. Written as value version 1 when 2.
	clientTV int16
	// markerTV is the transaction version this Prepare state's markers
	// say (WriteTxnMarkers v2, KIP-1228): 2 when its end bumped the epoch
	// of a transactions v2 transaction, so that a partition takes them
	// only above the producer's epoch there; 0 otherwise, and after a
	// load (memory only: the older rule, which those markers pass too).
	markerTV   int16
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
// AddOffsetsToTxn (and of their implicit forms in transactions v2, tv 2):
// nil when every partition is already in the ongoing transaction (nothing
// to write).
func (m *txnMeta) addPartitions(tps []TopicPartition, now int64, tv int16) (*txnMeta, error) {
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
	n.clientTV = tv
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
		n.state, n.markerTV = prepare, 0
		return n, nil
	case complete:
		return nil, nil
	case prepare:
		return nil, ErrConcurrentTransactions
	}
	return nil, ErrInvalidTxnState
}

// endV2 is the transition of EndTxn v5 (transactions v2, KIP-890 part 2),
// Kafka's table for transaction version 2: every end bumps the epoch (the
// Prepare state carries epoch+1, and its markers), so a request at the
// epoch before the current one is the retry of an end that happened.
//
//	state           abort retry  abort current  commit retry  commit current
//	Empty           FENCED       bump           FENCED        INVALID_TXN_STATE
//	CompleteAbort   as it was    bump           INVALID       INVALID_TXN_STATE
//	CompleteCommit  INVALID      bump           as it was     INVALID_TXN_STATE
//
// An abort of Empty or Complete is a transaction that added no partition
// (the client's produces failed): it is prepared and completed with no
// markers. Ongoing at the current epoch is prepared; Prepare at the
// retry's epoch is CONCURRENT_TRANSACTIONS (the same end) or
// INVALID_TXN_STATE. newPID is the producer id to move to when the epoch
// is exhausted (-1: none at hand; the end is refused as concurrent and the
// client retries). nil, nil: answer with m as it is.
func (m *txnMeta) endV2(pid int64, epoch int16, commit bool, newPID, now int64) (*txnMeta, error) {
	if m == nil {
		return nil, ErrInvalidProducerIDMapping
	}
	// A retry of an end that moved the id to a new producer id: the
	// client still has the old one at the last epoch.
	retryOnOverflow := m.prevProducerID >= 0 && pid == m.prevProducerID && epoch == math.MaxInt16-1 && m.epoch == 0
	retryOnBump := pid == m.producerID && m.epoch == epoch+1
	if pid != m.producerID && !retryOnOverflow {
		return nil, ErrInvalidProducerIDMapping
	}
	var valid bool
	switch m.state {
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		valid = retryOnBump
	case kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		valid = retryOnBump || retryOnOverflow || epoch == m.epoch
	default:
		valid = epoch == m.epoch
	}
	if !valid {
		return nil, ErrProducerFenced
	}
	retry := retryOnBump || retryOnOverflow
	prepare := func(state kmsg.TransactionState, empty bool) (*txnMeta, error) {
		if m.epoch == math.MaxInt16 {
			return nil, fmt.Errorf("%w: epoch %d cannot be bumped", ErrInvalidTxnState, m.epoch)
		}
		n := m.clone()
		if m.epochExhausted() {
			if newPID < 0 {
				return nil, ErrConcurrentTransactions
			}
			n.nextProducerID = newPID
		}
		n.state, n.clientTV, n.markerTV = state, 2, 2
		n.lastEpoch, n.epoch = m.epoch, m.epoch+1
		if empty {
			n.partitions, n.start = map[TopicPartition]struct{}{}, now
		}
		return n, nil
	}
	switch m.state {
	case kmsg.TransactionStateOngoing:
		if commit {
			return prepare(kmsg.TransactionStatePrepareCommit, false)
		}
		return prepare(kmsg.TransactionStatePrepareAbort, false)
	case kmsg.TransactionStateCompleteCommit:
		switch {
		case commit && retry:
			return nil, nil
		case !commit && !retry:
			return prepare(kmsg.TransactionStatePrepareAbort, true)
		}
	case kmsg.TransactionStateCompleteAbort:
		switch {
		case !commit && retry:
			return nil, nil
		case !commit:
			return prepare(kmsg.TransactionStatePrepareAbort, true)
		}
	case kmsg.TransactionStatePrepareCommit:
		if commit {
			return nil, ErrConcurrentTransactions
		}
	case kmsg.TransactionStatePrepareAbort:
		if !commit {
			return nil, ErrConcurrentTransactions
		}
	case kmsg.TransactionStateEmpty:
		if !commit {
			return prepare(kmsg.TransactionStatePrepareAbort, true)
		}
	}
	return nil, fmt.Errorf("%w: %s of a transaction in state %s", ErrInvalidTxnState, endName(commit), m.state)
}

func endName(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// nextProducer is the producer id and epoch a client continues with after
// m, a state EndTxn v5 wrote or found: the new producer id at epoch 0 when
// the end moves to one.
func (m *txnMeta) nextProducer() (int64, int16) {
	if m.nextProducerID >= 0 {
		return m.nextProducerID, 0
	}
	return m.producerID, m.epoch
}

// completed is the state after the markers of a Prepare state are written;
// a transactions v2 end whose epoch ran out moves to its next producer id
// at epoch 0.
func (m *txnMeta) completed() *txnMeta {
	n := m.clone()
	if m.nextProducerID >= 0 {
		n.prevProducerID, n.producerID, n.epoch, n.lastEpoch, n.nextProducerID = m.producerID, m.nextProducerID, 0, -1, -1
	}
	n.state, n.markerTV = kmsg.TransactionStateCompleteAbort, 0
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
// that the old producer is fenced, then the abort is prepared. A
// transactions v2 transaction is bumped twice, as Kafka's fence and end
// are: after one bump its producer's EndTxn would look like the retry of
// an end that happened (endV2) and be answered as done, not fenced.
func (m *txnMeta) fenceAndAbort() *txnMeta {
	n := m.clone()
	n.markerTV = 0
	switch {
	case m.clientTV >= 2 && m.epoch < math.MaxInt16-2:
		n.lastEpoch, n.epoch = m.epoch, m.epoch+2
		n.markerTV = 2
	case !m.epochExhausted():
		n.lastEpoch, n.epoch = m.epoch, m.epoch+1
	}
	// An exhausted epoch is not bumped: its markers are at the producer's
	// epoch, which the version 2 rule refuses while the transaction is
	// open, so they say version 0.
	n.state = kmsg.TransactionStatePrepareAbort
	return n
}
