package partition

import (
	"fmt"
	"sort"

	"github.com/shale-io/shale/internal/invariants"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// The log side of transactions (KIP-98): transactional batches open a
// producer's transaction in this partition, a transaction marker (a control
// batch the coordinator has the leader write, AppendTxnMarker) ends it, and
// the last stable offset (LSO) is the high watermark held back by the
// earliest transaction not yet decided and replicated.

// TxnMarker is a transaction marker to write (WriteTxnMarkers): the end of
// producer (ProducerID, ProducerEpoch)'s transaction in this partition,
// committed or aborted, by the coordinator at CoordinatorEpoch.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the transaction's (WriteTxnMarkers v2,
	// KIP-1228): 2 for transactions v2, whose markers must be above the
	// producer's epoch; 0 when unknown, as v0-v1 send it.
	TransactionVersion int8
}

// ProducerInfo is one producer's state in this partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1 when no batch of the current epoch is cached
	LastTimestamp    int64 // of its last batch or marker, -1 when unknown
	CoordinatorEpoch int32 // of its last marker, -1 before any
	// CurrentTxnStartOffset is the first offset of its open transaction,
	// -1 when none is open.
	CurrentTxnStartOffset int64
}

// txnRange is a completed transaction whose marker (at Last) was not yet
// below the high watermark when it was written: it holds the last stable
// offset at First until the marker is replicated, as Kafka's unreplicated
// transactions do.
type txnRange struct{ First, Last int64 }

// AppendTxnMarker appends, on the leader, a control batch holding m as
// Kafka's EndTransactionMarker (attributes control and transactional, one
// control record: key version 0 and type ABORT 0 or COMMIT 1, value version
// 0 and the coordinator epoch), and ends the producer's open transaction.
// An aborted transaction is recorded in the segment's transaction index
// (.txnindex). The caller waits for replication with WaitCommitted
// (res.LastOffset, res.LeaderEpoch).
//
// A marker at a producer epoch older than the producer's current one (a
// transactions v2 marker: not above it while its transaction is open) is
// ErrProducerFenced; one from a coordinator epoch older than the
// producer's last marker's is ErrCoordinatorFenced. A replica that does
// not lead is ErrNotLeader. Safe for concurrent use.
func (r *Replica) AppendTxnMarker(m TxnMarker) (AppendResult, error) {
	if _, err := r.leaderWritable(); err != nil {
		return AppendResult{}, err
	}
	if m.ProducerID < 0 {
		return AppendResult{}, fmt.Errorf("%w: marker for producer id %d", ErrInvalidTxnState, m.ProducerID)
	}
	marker := batch.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}
	records, err := batch.BuildEndTxnMarker(nil, m.ProducerID, m.ProducerEpoch, r.now().UnixMilli(), marker)
	if err != nil {
		return AppendResult{}, err
	}

	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	epoch, err := r.appendEpoch()
	if err != nil {
		return AppendResult{}, err
	}
	if err := r.producers.CheckMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.TransactionVersion); err != nil {
		return AppendResult{}, err
	}
	var one [1]batch.Checked
	bs, err := batch.ParseAll(one[:0], records)
	if err != nil {
		return AppendResult{}, err
	}
	info, err := r.log.AppendChecked(bs, epoch)
	if invariants.Enabled {
		r.checkHandedDown(bs[:len(info.Batches)])
	}
	for i := range info.Batches {
		r.applyTxnMarkerLocked(&bs[i].Header, marker) // the log stamped its offsets into the header
		if g, ok := r.guards[m.ProducerID]; ok && (!g.v2 || m.ProducerEpoch > g.epoch) {
			delete(r.guards, m.ProducerID) // a verification before the marker is void
		}
	}
	if ierr := r.writeAbortedLocked(); err == nil {
		err = ierr
	}
	return r.appended(info, err, true, -1, epoch)
}

// applyBatchLocked records one batch of the log (h with its offsets, raw
// its bytes) in producer state: what appends, replays and follower appends
// all do. REQUIRES: appendMu held.
func (r *Replica) applyBatchLocked(h *batch.Header, raw []byte) {
	if txn, ok := r.producers.Apply(h, raw); ok {
		r.completedLocked(r.producers, txn)
	}
}

// applyTxnMarkerLocked is applyBatchLocked for a marker this leader wrote.
// REQUIRES: appendMu held.
func (r *Replica) applyTxnMarkerLocked(h *batch.Header, m batch.EndTxnMarker) {
	r.completedLocked(r.producers, r.producers.EndTxn(h, m))
}

// completedLocked notes a transaction a marker ended, ps the producer state
// after it: for the last stable offset (publishTxnStateLocked) and, when
// aborted, for the segment's transaction index (writeAbortedLocked), with
// the last stable offset after the abort (the earliest transaction still
// open in ps, or the offset after the marker). REQUIRES: appendMu held.
func (r *Replica) completedLocked(ps *ProducerState, txn CompletedTxn) {
	r.txnDone = append(r.txnDone, txnRange{First: txn.FirstOffset, Last: txn.LastOffset})
	if txn.Aborted {
		lso := ps.FirstOpenOffset()
		if lso < 0 {
			lso = txn.LastOffset + 1
		}
		r.abortedPending = append(r.abortedPending, segment.AbortedTxn{
			ProducerID: txn.ProducerID, FirstOffset: txn.FirstOffset, LastOffset: txn.LastOffset, LastStableOffset: lso,
		})
	}
}

// writeAbortedLocked records the aborted transactions noted since the last
// call in the transaction index. A failure is logged and returned: the
// marker is in the log, but a read_committed consumer would not learn of
// the abort. REQUIRES: appendMu held, r.mu not held.
func (r *Replica) writeAbortedLocked() error {
	var first error
	for _, a := range r.abortedPending {
		if err := r.log.AppendAbortedTxn(a); err != nil {
			r.logger.Error("aborted transaction not recorded in the transaction index", "producer_id", a.ProducerID,
				"first_offset", a.FirstOffset, "last_offset", a.LastOffset, "err", err)
			if first == nil {
				first = err
			}
		}
	}
	r.abortedPending = r.abortedPending[:0]
	return first
}

// publishTxnStateLocked makes the producer state's open transactions and
// the transactions completed since the last call visible to
// LastStableOffset. REQUIRES: appendMu and r.mu held.
func (r *Replica) publishTxnStateLocked() {
	r.mu.firstOpen = r.producers.FirstOpenOffset()
	r.mu.unreplicated = append(r.mu.unreplicated, r.txnDone...)
	r.txnDone = r.txnDone[:0]
	r.lastStableOffsetLocked() // drops the replicated ones, so the list stays short
	r.notifyWatchers()
}

// resetTxnStateLocked forgets what publishTxnStateLocked made visible, for
// a producer state rebuilt from scratch (truncation, a reset), and
// publishes the new one. REQUIRES: appendMu and r.mu held.
func (r *Replica) resetTxnStateLocked(end int64) {
	n := 0
	for _, t := range r.mu.unreplicated {
		if t.Last < end {
			r.mu.unreplicated[n] = t
			n++
		}
	}
	r.mu.unreplicated = r.mu.unreplicated[:n]
	r.publishTxnStateLocked()
}

// LastStableOffset is the offset below which every transaction is decided
// and its marker replicated: the high watermark, or the first offset of the
// earliest transaction that is still open or whose marker is not yet below
// the high watermark, whichever is smaller (Kafka's LSO). read_committed
// consumers read below it.
func (r *Replica) LastStableOffset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastStableOffsetLocked()
}

// lastStableOffsetLocked is LastStableOffset. REQUIRES: r.mu held.
func (r *Replica) lastStableOffsetLocked() int64 {
	hw := r.mu.hw
	lso := hw
	if r.mu.firstOpen >= 0 && r.mu.firstOpen < lso {
		lso = r.mu.firstOpen
	}
	n := 0
	for _, t := range r.mu.unreplicated {
		if t.Last < hw {
			continue // its marker is replicated
		}
		r.mu.unreplicated[n] = t
		n++
		lso = min(lso, t.First)
	}
	r.mu.unreplicated = r.mu.unreplicated[:n]
	return lso
}

// Producers returns the state of every producer this replica knows, by
// producer id (DescribeProducers). It answers on any replica; the caller
// answers NOT_LEADER_OR_FOLLOWER where Kafka does. The caller owns the
// returned slice.
func (r *Replica) Producers() []ProducerInfo {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	out := make([]ProducerInfo, 0, len(r.producers.producers))
	for id, e := range r.producers.producers {
		out = append(out, ProducerInfo{
			ProducerID: id, ProducerEpoch: e.Epoch, LastSequence: e.lastSeq(), LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.TxnFirstOffset,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// HasOpenTxn reports whether producer id has a transaction open in this
// partition at epoch (the produce path verifies only the batch that would
// open one, KIP-890).
func (r *Replica) HasOpenTxn(id int64, epoch int16) bool {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	e, ok := r.producers.producers[id]
	return ok && e.Epoch == epoch && e.TxnFirstOffset >= 0
}

// VerificationGuard ties a transactional batch to the verification the
// produce path made with the coordinator before it (KIP-890's
// VerificationGuard): StartVerification returns one, any marker for the
// producer voids it, and AppendLeaderVerified refuses the batch that would
// open a transaction with a void guard. Zero is no guard.
type VerificationGuard uint64

// NotVerified is the guard of a transactional batch that the produce path
// did not verify because its transaction was open here already: it never
// matches, so the batch is refused if a marker ended the transaction
// before the append (it would open a new one unverified), as Kafka's
// sentinel guard is.
const NotVerified VerificationGuard = ^VerificationGuard(0)

// verification is a guard handed out by StartVerification: a marker for
// the producer voids it, except, for a transactions v2 add (v2), a marker
// at an epoch no newer than the batch's (epoch): that is the end of the
// producer's previous transaction, whose markers carry the epoch the
// next transaction's batches are at (KIP-890 part 2), while the end of
// the transaction the batch is added to is at a later epoch.
type verification struct {
	guard VerificationGuard
	epoch int16
	v2    bool
}

// StartVerification records that the produce path is about to verify
// producer id's transaction with its coordinator, and returns the guard to
// append with.
func (r *Replica) StartVerification(id int64) VerificationGuard {
	return r.startVerification(id, 0, false)
}

// StartVerificationV2 is StartVerification for a transactions v2 add
// (Produce v12) of a batch at epoch: the end of the producer's previous
// transaction, whose markers carry that epoch, does not void it.
func (r *Replica) StartVerificationV2(id int64, epoch int16) VerificationGuard {
	return r.startVerification(id, epoch, true)
}

func (r *Replica) startVerification(id int64, epoch int16, v2 bool) VerificationGuard {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	r.guardSeq++
	if r.guards == nil {
		r.guards = map[int64]verification{}
	}
	r.guards[id] = verification{guard: VerificationGuard(r.guardSeq), epoch: epoch, v2: v2}
	return r.guards[id].guard
}

// AppendLeaderVerified is AppendLeader for a transactional batch verified
// with the coordinator under guard (StartVerification): a batch that would
// open the producer's transaction is ErrInvalidTxnState when a marker for
// the producer was written since the verification started (the
// transaction it was verified in has ended: appending it would open one
// that no coordinator knows, a hanging transaction).
func (r *Replica) AppendLeaderVerified(records []byte, guard VerificationGuard) (AppendResult, error) {
	return r.appendLeader(records, guard)
}

// checkGuardLocked applies AppendLeaderVerified's rule to batch h (dup: a
// retried batch, which opens nothing) and consumes the guard of a batch
// that opens a transaction. REQUIRES: appendMu held.
func (r *Replica) checkGuardLocked(h *batch.Header, guard VerificationGuard, dup bool) error {
	if guard == 0 || dup || !h.Transactional() {
		return nil
	}
	if e, ok := r.producers.producers[h.ProducerID]; ok && e.TxnFirstOffset >= 0 {
		return nil // the transaction is open here already
	}
	if g, ok := r.guards[h.ProducerID]; !ok || g.guard != guard {
		return fmt.Errorf("%w: producer %d's transaction ended during the batch's verification", ErrInvalidTxnState, h.ProducerID)
	}
	delete(r.guards, h.ProducerID)
	return nil
}
