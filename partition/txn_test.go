package partition

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// txnOpts are the options of a transactional producer's batch.
func txnOpts(pid int64, epoch int16, seq int32, ts int64) batch.BuildOptions {
	o := idem(pid, seq, ts)
	o.ProducerEpoch, o.Transactional = epoch, true
	return o
}

func appendTxn(t *testing.T, r *Replica, pid int64, epoch int16, seq int32, n int) AppendResult {
	t.Helper()
	res, err := r.AppendLeader(build(t, txnOpts(pid, epoch, seq, time.Now().UnixMilli()), n))
	if err != nil {
		t.Fatalf("transactional append of producer %d: %v", pid, err)
	}
	return res
}

func marker(t *testing.T, r *Replica, m TxnMarker) AppendResult {
	t.Helper()
	res, err := r.AppendTxnMarker(m)
	if err != nil {
		t.Fatalf("marker %+v: %v", m, err)
	}
	return res
}

func producerInfo(t *testing.T, r *Replica, pid int64) ProducerInfo {
	t.Helper()
	for _, p := range r.Producers() {
		if p.ProducerID == pid {
			return p
		}
	}
	t.Fatalf("producer %d not in %+v", pid, r.Producers())
	return ProducerInfo{}
}

// TestAppendTxnMarkerWritesKafkasControlBatch: the marker is a control
// batch laid out as Kafka's EndTransactionMarker, it ends the producer's
// transaction, and the last stable offset follows the open transactions.
func TestAppendTxnMarkerWritesKafkasControlBatch(t *testing.T) {
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	r.AppendLeader(build(t, batch.NoProducer(), 2)) // 0-1
	appendTxn(t, r, 7, 3, 0, 3)                     // 2-4
	appendTxn(t, r, 8, 0, 0, 1)                     // 5
	appendTxn(t, r, 7, 3, 3, 2)                     // 6-7
	if got := producerInfo(t, r, 7); got.CurrentTxnStartOffset != 2 || got.LastSequence != 4 || got.ProducerEpoch != 3 || got.CoordinatorEpoch != -1 {
		t.Fatalf("producer 7 with an open transaction: %+v", got)
	}
	if lso, hw := r.LastStableOffset(), r.HighWatermark(); lso != 2 || hw != 8 {
		t.Fatalf("lso %d hw %d, want 2 and 8", lso, hw)
	}

	res := marker(t, r, TxnMarker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 5, Commit: true})
	if res.BaseOffset != 8 || res.LastOffset != 8 {
		t.Fatalf("marker at %+v, want 8", res)
	}
	if got := producerInfo(t, r, 7); got.CurrentTxnStartOffset != -1 || got.CoordinatorEpoch != 5 || got.LastSequence != 4 {
		t.Fatalf("producer 7 after its commit: %+v", got)
	}
	if lso := r.LastStableOffset(); lso != 5 {
		t.Fatalf("lso %d after 7's commit, want 5 (8's transaction)", lso)
	}
	marker(t, r, TxnMarker{ProducerID: 8, ProducerEpoch: 0, CoordinatorEpoch: 5, Commit: false})
	if lso, hw := r.LastStableOffset(), r.HighWatermark(); lso != 10 || hw != 10 {
		t.Fatalf("lso %d hw %d with no transaction open, want 10", lso, hw)
	}

	b, err := r.Log().ReadBytes(8, 1<<20, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []bool
	err = batch.Split(b, func(h *batch.Header, raw []byte) error {
		if !h.Control() || !h.Transactional() || h.Attributes != 0x30 || h.BaseSequence != -1 || h.NumRecords != 1 {
			t.Errorf("marker header %+v", h)
		}
		recs, err := batch.Records(raw, 1<<20)
		if err != nil {
			return err
		}
		typ := byte(0)
		if h.ProducerID == 7 {
			typ = 1
			kinds = append(kinds, true)
		} else {
			kinds = append(kinds, false)
		}
		if want := []byte{0, 0, 0, typ}; !bytes.Equal(recs[0].Key, want) {
			t.Errorf("producer %d marker key %x, want %x", h.ProducerID, recs[0].Key, want)
		}
		if want := []byte{0, 0, 0, 0, 0, 5}; !bytes.Equal(recs[0].Value, want) {
			t.Errorf("marker value %x, want %x", recs[0].Value, want)
		}
		m, ok, err := batch.ParseEndTxnMarker(raw)
		if err != nil || !ok || m.Commit != (h.ProducerID == 7) || m.CoordinatorEpoch != 5 {
			t.Errorf("ParseEndTxnMarker: %+v %v %v", m, ok, err)
		}
		return nil
	})
	if err != nil || len(kinds) != 2 {
		t.Fatalf("markers read back: %v %v", kinds, err)
	}
}

// TestTxnFencing: stale producer and coordinator epochs are refused, a
// non-transactional batch inside an open transaction too, and a marker at a
// bumped epoch moves the producer to it.
func TestTxnFencing(t *testing.T) {
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	appendTxn(t, r, 7, 2, 0, 1)
	if _, err := r.AppendLeader(build(t, txnOpts(7, 1, 1, time.Now().UnixMilli()), 1)); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("transactional batch at an older epoch: %v", err)
	}
	if _, err := r.AppendLeader(build(t, idem(7, 1, time.Now().UnixMilli()), 1)); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("epoch 0 batch: %v", err)
	}
	plain := idem(7, 1, time.Now().UnixMilli())
	plain.ProducerEpoch = 2
	if _, err := r.AppendLeader(build(t, plain, 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch inside the transaction: %v", err)
	}
	if _, err := r.AppendTxnMarker(TxnMarker{ProducerID: 7, ProducerEpoch: 1, CoordinatorEpoch: 4, Commit: true}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("marker at an older epoch: %v", err)
	}
	marker(t, r, TxnMarker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 4}) // KIP-890: the marker bumps the epoch
	if _, err := r.AppendTxnMarker(TxnMarker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 3, Commit: true}); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator epoch: %v", err)
	}
	if got := producerInfo(t, r, 7); got.ProducerEpoch != 3 || got.LastSequence != -1 || got.CurrentTxnStartOffset != -1 {
		t.Fatalf("after the bumping abort: %+v", got)
	}
	if _, err := r.AppendLeader(build(t, txnOpts(7, 2, 1, time.Now().UnixMilli()), 1)); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("the old epoch after the bump: %v", err)
	}
	res := appendTxn(t, r, 7, 3, 0, 1)
	if got := producerInfo(t, r, 7); got.CurrentTxnStartOffset != res.BaseOffset {
		t.Fatalf("next transaction at %d: %+v", res.BaseOffset, got)
	}
	if r.Log().LogEndOffset() != 3 {
		t.Fatalf("log end %d, want 3: a refused batch or marker was written", r.Log().LogEndOffset())
	}
	r.SetLeadership(false, 1)
	if _, err := r.AppendTxnMarker(TxnMarker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 4}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("marker on a follower: %v", err)
	}
}

// TestOpenTxnSurvivesRestart: a transaction open at a clean close (its
// snapshot) and at a crash (replayed from the log) is open again after the
// reopen, and its marker found in the log closes it.
func TestOpenTxnSurvivesRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir()
		r := openTest(t, dir, nil, nil)
		appendTxn(t, r, 7, 0, 0, 2) // 0-1
		appendTxn(t, r, 8, 0, 0, 2) // 2-3
		marker(t, r, TxnMarker{ProducerID: 8, ProducerEpoch: 0, CoordinatorEpoch: 1, Commit: true})
		appendTxn(t, r, 8, 0, 2, 1) // 5: 8's next transaction
		if crash {
			copyDir := crashCopy(t, dir)
			r.Close()
			dir = copyDir
		} else if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		r = openTest(t, dir, nil, nil)
		if got := producerInfo(t, r, 7); got.CurrentTxnStartOffset != 0 {
			t.Fatalf("crash %v: producer 7 %+v", crash, got)
		}
		if got := producerInfo(t, r, 8); got.CurrentTxnStartOffset != 5 || got.CoordinatorEpoch != 1 {
			t.Fatalf("crash %v: producer 8 %+v", crash, got)
		}
		if lso := r.LastStableOffset(); lso != 0 {
			t.Fatalf("crash %v: lso %d, want 0", crash, lso)
		}
		marker(t, r, TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1, Commit: true})
		if lso := r.LastStableOffset(); lso != 5 {
			t.Fatalf("crash %v: lso %d after 7's commit, want 5", crash, lso)
		}
		r.Close()
	}
}

// TestFollowerTxnStateAndTruncation: a follower learns transactions from
// the batches it replicates, the leader's last stable offset waits for a
// marker to be replicated, and a truncation that cuts a marker reopens its
// transaction.
func TestFollowerTxnStateAndTruncation(t *testing.T) {
	leader, follower := pair(t, "1")
	now := time.Now()
	appendTxn(t, leader, 7, 0, 0, 2) // 0-1
	replicate(t, leader, follower, now)
	replicate(t, leader, follower, now)
	marker(t, leader, TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 2, Commit: false}) // 2
	if lso, hw := leader.LastStableOffset(), leader.HighWatermark(); lso != 0 || hw != 2 {
		t.Fatalf("marker not replicated: lso %d hw %d, want 0 and 2", lso, hw)
	}
	replicate(t, leader, follower, now) // the follower takes the marker
	replicate(t, leader, follower, now) // and the leader learns it has it
	if lso, hw := leader.LastStableOffset(), leader.HighWatermark(); lso != 3 || hw != 3 {
		t.Fatalf("marker replicated: lso %d hw %d, want 3", lso, hw)
	}
	if got := producerInfo(t, follower, 7); got.CurrentTxnStartOffset != -1 || got.CoordinatorEpoch != 2 {
		t.Fatalf("follower after the marker: %+v", got)
	}
	if err := follower.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if got := producerInfo(t, follower, 7); got.CurrentTxnStartOffset != 0 || got.CoordinatorEpoch != -1 {
		t.Fatalf("follower after cutting the marker: %+v", got)
	}
	if lso := follower.LastStableOffset(); lso != 0 {
		t.Fatalf("follower lso %d after cutting the marker, want 0", lso)
	}
}

// TestAbortedTxnIndex: an ABORT marker records the transaction in the
// segment's .txnindex with Kafka's last stable offset, on the leader and
// on a follower; a reopen rebuilds an index lost after the last snapshot;
// a truncation of the marker drops its entry.
func TestAbortedTxnIndex(t *testing.T) {
	leader, follower := pair(t, "1")
	now := time.Now()
	appendTxn(t, leader, 7, 0, 0, 2)                                             // 0-1
	appendTxn(t, leader, 8, 0, 0, 1)                                             // 2
	marker(t, leader, TxnMarker{ProducerID: 7, ProducerEpoch: 0, Commit: false}) // 3: 8 still open at 2
	marker(t, leader, TxnMarker{ProducerID: 8, ProducerEpoch: 0, Commit: true})  // 4
	appendTxn(t, leader, 8, 0, 1, 1)                                             // 5
	marker(t, leader, TxnMarker{ProducerID: 8, ProducerEpoch: 0, Commit: false}) // 6: none open
	want := []segment.AbortedTxn{
		{ProducerID: 7, FirstOffset: 0, LastOffset: 3, LastStableOffset: 2},
		{ProducerID: 8, FirstOffset: 5, LastOffset: 6, LastStableOffset: 7},
	}
	if got := leader.Log().AbortedTxns(0, 7); !reflect.DeepEqual(got, want) {
		t.Fatalf("leader's aborted transactions %+v, want %+v", got, want)
	}
	replicate(t, leader, follower, now)
	if got := follower.Log().AbortedTxns(0, 7); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower's aborted transactions %+v, want %+v", got, want)
	}
	if err := follower.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if got := follower.Log().AbortedTxns(0, 7); !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("follower's aborted transactions after the cut %+v", got)
	}

	// A crash that lost the index file: the replay from the snapshot (none
	// here: from the log start) writes it again.
	dir := leader.Log().Dir()
	copyDir := crashCopy(t, dir)
	if err := os.Remove(filepath.Join(copyDir, "00000000000000000000.txnindex")); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, copyDir, nil, nil)
	defer r.Close()
	if got := r.Log().AbortedTxns(0, 7); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted transactions after the crash %+v, want %+v", got, want)
	}
}

// TestFollowerRollAfterAbortKeepsIndexRecoverable: a follower append that
// holds an ABORT marker and rolls after it writes no producer snapshot at
// the roll, so that a crash before the append's .txnindex write (the state
// left here by removing the file) recovers the entry by replaying from an
// older snapshot. It failed before: the roll's snapshot made recovery
// replay from after the marker.
func TestFollowerRollAfterAbortKeepsIndexRecoverable(t *testing.T) {
	cfg := map[string]string{"min.insync.replicas": "1", "segment.bytes": "1024"}
	leader, follower := openFollower(t, t.TempDir(), cfg, nil), openFollower(t, t.TempDir(), cfg, nil)
	defer leader.Close()
	defer follower.Close()
	leader.SetLeadership(true, 1)
	follower.SetLeadership(false, 1)
	leader.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	follower.SetAssignment(2, []int32{1, 2}, []int32{1, 2})
	appendTxn(t, leader, 7, 0, 0, 2)
	res := marker(t, leader, TxnMarker{ProducerID: 7, ProducerEpoch: 0})
	for range 20 {
		if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
			t.Fatal(err)
		}
	}
	if len(leader.Log().Segments()) < 3 {
		t.Fatalf("only %d segments on the leader", len(leader.Log().Segments()))
	}
	// One follower append of everything the first segments hold.
	var b []byte
	for off := int64(0); off < leader.Log().LogEndOffset(); {
		part, err := leader.Log().ReadBytes(off, 1<<20, leader.Log().LogEndOffset(), true)
		if err != nil || len(part) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		batch.Split(part, func(h *batch.Header, _ []byte) error { off = h.NextOffset(); return nil })
		b = append(b, part...)
	}
	if err := follower.AppendFollower(b, leader.HighWatermark()); err != nil {
		t.Fatal(err)
	}
	if len(follower.Log().Segments()) < 2 {
		t.Fatalf("the follower's append did not roll: %d segments", len(follower.Log().Segments()))
	}
	want := []segment.AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: res.BaseOffset, LastStableOffset: res.BaseOffset + 1}}
	if got := follower.Log().AbortedTxns(0, follower.Log().LogEndOffset()); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower's aborted transactions %+v", got)
	}
	copyDir := crashCopy(t, follower.Log().Dir())
	if err := os.Remove(filepath.Join(copyDir, "00000000000000000000.txnindex")); err != nil {
		t.Fatal(err)
	}
	r := openFollower(t, copyDir, cfg, nil)
	defer r.Close()
	if got := r.Log().AbortedTxns(0, r.Log().LogEndOffset()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the crash: %+v, want %+v", got, want)
	}
}

// TestResetFromRemoteKeepsOpenTxn: a follower rebuilt from the remote
// tail, whose uploaded snapshot (SnapshotAt, as tiering takes it) was taken
// with a transaction open, holds that transaction open at its first offset
// (the last stable offset waits for it), and the marker it replicates later
// ends it and is recorded in its .txnindex.
func TestResetFromRemoteKeepsOpenTxn(t *testing.T) {
	cfg := map[string]string{"segment.bytes": "1024", "min.insync.replicas": "1"}
	leader := openTest(t, t.TempDir(), cfg, nil)
	defer leader.Close()
	leader.SetLeadership(true, 3)
	first := appendTxn(t, leader, 7, 0, 0, 2)
	for range 30 {
		if _, err := leader.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
			t.Fatal(err)
		}
	}
	segs := leader.Log().Segments()
	at := segs[len(segs)-1].BaseOffset
	snap, ok, err := leader.SnapshotAt(at)
	if err != nil || !ok {
		t.Fatalf("SnapshotAt(%d): %v %v", at, ok, err)
	}
	res := marker(t, leader, TxnMarker{ProducerID: 7, ProducerEpoch: 0})

	follower := openFollower(t, t.TempDir(), cfg, nil)
	defer follower.Close()
	follower.SetLeadership(false, 3)
	if err := follower.ResetFromRemote(RemoteTail{Offset: at, Epochs: leader.Log().Epochs(), ProducerSnapshot: snap}); err != nil {
		t.Fatal(err)
	}
	if got := producerInfo(t, follower, 7); got.CurrentTxnStartOffset != first.BaseOffset {
		t.Fatalf("after the reset: %+v, want the transaction open at %d", got, first.BaseOffset)
	}
	if lso := follower.LastStableOffset(); lso != first.BaseOffset {
		t.Fatalf("lso %d after the reset, want %d", lso, first.BaseOffset)
	}
	for off := at; off < leader.Log().LogEndOffset(); {
		b, err := leader.Log().ReadBytes(off, 1<<20, leader.Log().LogEndOffset(), true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		batch.Split(b, func(h *batch.Header, _ []byte) error { off = h.NextOffset(); return nil })
		if err := follower.AppendFollower(b, leader.HighWatermark()); err != nil {
			t.Fatal(err)
		}
	}
	if got := producerInfo(t, follower, 7); got.CurrentTxnStartOffset != -1 {
		t.Fatalf("after the marker: %+v", got)
	}
	want := []segment.AbortedTxn{{ProducerID: 7, FirstOffset: first.BaseOffset, LastOffset: res.BaseOffset, LastStableOffset: res.BaseOffset + 1}}
	if got := follower.Log().AbortedTxns(at, res.BaseOffset+1); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower's aborted transactions %+v, want %+v", got, want)
	}
}

// TestTxnAcrossLeaderChange: the leader fails over with a transaction
// open and its ABORT marker written but not replicated. The new leader
// still has the transaction open (the LSO waits at its first offset) and
// takes the coordinator's retried marker, a COMMIT here (the coordinator's
// decision is the one it re-sends); the old leader, back as a follower,
// cuts its unreplicated marker (its .txnindex entry with it), reopens the
// transaction, and replicates the new leader's marker: both replicas agree
// on every transaction.
func TestTxnAcrossLeaderChange(t *testing.T) {
	a, b := pair(t, "1")
	now := time.Now()
	first := appendTxn(t, a, 7, 0, 0, 2)
	appendTxn(t, a, 7, 0, 2, 1)
	replicate(t, a, b, now)
	replicate(t, a, b, now)
	lost := marker(t, a, TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1}) // never replicated
	if got := a.Log().AbortedTxns(0, lost.BaseOffset+1); len(got) != 1 {
		t.Fatalf("old leader's index %+v", got)
	}

	// Failover to b at epoch 2.
	a.SetLeadership(false, 2)
	b.SetLeadership(true, 2)
	b.SetAssignment(2, []int32{1, 2}, []int32{2})
	if got := producerInfo(t, b, 7); got.CurrentTxnStartOffset != first.BaseOffset {
		t.Fatalf("new leader: %+v", got)
	}
	if lso := b.LastStableOffset(); lso != first.BaseOffset {
		t.Fatalf("new leader's lso %d, want %d", lso, first.BaseOffset)
	}
	res := marker(t, b, TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 2, Commit: true})
	if res.BaseOffset != lost.BaseOffset {
		t.Fatalf("new marker at %d, the lost one was at %d", res.BaseOffset, lost.BaseOffset)
	}
	if lso, hw := b.LastStableOffset(), b.HighWatermark(); lso != hw || hw != res.BaseOffset+1 {
		t.Fatalf("new leader after the marker: lso %d hw %d", lso, hw)
	}

	// a follows b: OffsetForLeaderEpoch says epoch 1 ends at the marker's
	// offset on b, so a cuts its own marker there.
	epoch, end := b.Log().EndOffsetForEpoch(1)
	if _, err := a.TruncateDivergent(1, epoch, end); err != nil {
		t.Fatal(err)
	}
	if got := producerInfo(t, a, 7); got.CurrentTxnStartOffset != first.BaseOffset {
		t.Fatalf("old leader after the cut: %+v", got)
	}
	if got := a.Log().AbortedTxns(0, lost.BaseOffset+1); len(got) != 0 {
		t.Fatalf("old leader's index after the cut %+v", got)
	}
	off := a.Log().LogEndOffset()
	hw, err := b.FollowerFetch(1, off, a.Log().LatestEpoch(), now)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := b.Log().ReadBytes(off, 1<<20, b.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AppendFollower(bs, hw); err != nil {
		t.Fatal(err)
	}
	if got := producerInfo(t, a, 7); got.CurrentTxnStartOffset != -1 || got.CoordinatorEpoch != 2 {
		t.Fatalf("old leader after replicating the commit: %+v", got)
	}
	if got := a.Log().AbortedTxns(0, a.Log().LogEndOffset()); len(got) != 0 {
		t.Fatalf("old leader's index after the commit %+v", got)
	}
	if lso, hw := a.LastStableOffset(), a.HighWatermark(); lso != hw || hw != res.BaseOffset+1 {
		t.Fatalf("old leader as follower: lso %d hw %d", lso, hw)
	}
}

// TestTxnMarkerTransactionVersion2: a transactions v2 marker
// (WriteTxnMarkers v2, KIP-1228) carries the epoch the end bumped to: at
// the producer's epoch while its transaction is open it is refused
// (ErrProducerFenced, INVALID_PRODUCER_EPOCH) and writes nothing, above it
// it ends the transaction, and its retry at that epoch once the
// transaction ended is taken (KAFKA-19999). A marker of an unknown version
// (v0-v1) at the producer's epoch ends the transaction, as before.
func TestTxnMarkerTransactionVersion2(t *testing.T) {
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	appendTxn(t, r, 7, 2, 0, 1)
	appendTxn(t, r, 8, 2, 0, 1)
	end := r.Log().LogEndOffset()
	if _, err := r.AppendTxnMarker(TxnMarker{ProducerID: 7, ProducerEpoch: 2, Commit: true, TransactionVersion: 2}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("v2 marker at the open transaction's epoch: %v", err)
	}
	if r.Log().LogEndOffset() != end || producerInfo(t, r, 7).CurrentTxnStartOffset < 0 {
		t.Fatalf("the refused marker was written: log end %d, producer %+v", r.Log().LogEndOffset(), producerInfo(t, r, 7))
	}
	marker(t, r, TxnMarker{ProducerID: 7, ProducerEpoch: 3, Commit: true, TransactionVersion: 2})
	if got := producerInfo(t, r, 7); got.ProducerEpoch != 3 || got.CurrentTxnStartOffset != -1 {
		t.Fatalf("after the v2 marker: %+v", got)
	}
	marker(t, r, TxnMarker{ProducerID: 7, ProducerEpoch: 3, Commit: true, TransactionVersion: 2}) // the retry
	marker(t, r, TxnMarker{ProducerID: 8, ProducerEpoch: 2, Commit: true})                        // v0-v1: not below
	if got := producerInfo(t, r, 8); got.CurrentTxnStartOffset != -1 {
		t.Fatalf("after the v1 marker: %+v", got)
	}
	if _, err := r.AppendTxnMarker(TxnMarker{ProducerID: 7, ProducerEpoch: 2, TransactionVersion: 2}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("v2 marker below the producer's epoch: %v", err)
	}
}
