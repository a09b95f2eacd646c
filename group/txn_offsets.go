package group

// Transactional offsets (KIP-98, KIP-447). A TxnOffsetCommit appends its
// offsets in a transactional batch of the producer and keeps them pending
// per producer id (group.pendingTxn) until the transaction's marker is
// written to the partition: CompleteTxn then applies them on COMMIT and
// drops them on ABORT. Loading a partition does the same with the batches
// and markers it reads, so a transaction still open at a failover stays
// pending on the next coordinator until its marker arrives.

import (
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// txnProducer is the producer of a transactional offset commit, and the
// guard of its verification with the transaction coordinator (zero: not
// verified, a coordinator without one).
type txnProducer struct {
	id    int64
	epoch int16
	guard partition.VerificationGuard
}

// txnCommit validates a TxnOffsetCommit and appends its offsets as a
// transactional batch of producer; they are pending until the marker. It
// returns a code per offset and the offset to wait for (-1: nothing
// written).
func (g *group) txnCommit(cr commitRequest, producer txnProducer) ([]int16, int64) {
	codes := make([]int16, len(cr.offsets))
	all := func(code int16) ([]int16, int64) {
		for i := range codes {
			codes[i] = code
		}
		return codes, -1
	}
	switch {
	case g.state == StateDead:
		return all(kerr.CoordinatorNotAvailable.Code)
	case g.isShare():
		return all(kerr.GroupIDNotFound.Code) // Kafka's ShareGroup.validateOffsetCommit, transactional or not
	case g.consumer != nil:
		// A KIP-848 member commits with its member epoch as the
		// generation; a stale one is ILLEGAL_GENERATION here, the error
		// TxnOffsetCommit knows.
		cr.transactional = true
		switch code := g.consumer.validateCommit(cr); code {
		case 0:
		case kerr.StaleMemberEpoch.Code:
			return all(kerr.IllegalGeneration.Code)
		default:
			return all(code)
		}
	case cr.instanceID != nil && g.validateInstance(cr.instanceID, cr.memberID) != 0:
		return all(g.validateInstance(cr.instanceID, cr.memberID))
	case cr.generation < 0 && cr.memberID == "":
	default:
		m, ok := g.members[cr.memberID]
		if !ok {
			return all(kerr.UnknownMemberID.Code)
		}
		if cr.generation != g.generation {
			return all(kerr.IllegalGeneration.Code)
		}
		g.touch(m)
	}
	recs, entries, tps := g.offsetRecords(cr, codes)
	if len(recs) == 0 {
		return codes, -1
	}
	last, err := g.persistTxn(producer, recs)
	if err != nil {
		failUnset(codes, err)
		return codes, -1
	}
	// Pending from the append on, as in Kafka: if the append is never
	// replicated the marker never follows it here either (the partition
	// changes leader, and this group with it).
	pend := g.pendingTxn[producer.id]
	if pend == nil {
		pend = map[topicPartition]offsetEntry{}
		g.pendingTxn[producer.id] = pend
	}
	for i, e := range entries {
		e.logOffset = last
		pend[tps[i]] = e
	}
	return codes, last
}

// completeTxn applies (commit) or drops (abort) producer pid's pending
// offsets.
func (g *group) completeTxn(pid int64, commit bool) {
	pend, ok := g.pendingTxn[pid]
	if !ok {
		return
	}
	delete(g.pendingTxn, pid)
	if commit {
		g.applyReplicated(pend)
	}
}

// unstable reports whether tp has a pending transactional offset
// (OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT).
func (g *group) unstable(tp topicPartition) bool {
	for _, pend := range g.pendingTxn {
		if _, ok := pend[tp]; ok {
			return true
		}
	}
	return false
}

// CompleteTxn applies (commit) or drops (abort) the transactional offsets
// of producer pid in the groups of __consumer_offsets partition p, once
// the transaction's marker is committed there (WriteTxnMarkers calls it).
// A partition this node does not have loaded is skipped: its load reads
// the marker.
func (c *Coordinator) CompleteTxn(p int32, pid int64, commit bool) {
	var runners []*runner
	if sh, ok := c.rt.Loaded(p); ok {
		sh.mu.Lock()
		for _, r := range sh.mu.groups {
			runners = append(runners, r)
		}
		sh.mu.Unlock()
	}
	ctx := c.rt.Context()
	for _, r := range runners {
		done := make(chan struct{})
		if r.submit(ctx, func(g *group) { g.completeTxn(pid, commit); close(done) }) {
			select {
			case <-done:
			case <-r.done:
			case <-ctx.Done():
			}
		}
	}
}

// appendTxn writes records to sh's partition as one transactional batch of
// producer and returns its last offset. The partition's producer state
// checks the producer's epoch (an older one is fenced) and its sequence:
// the coordinator continues the producer's sequence in this partition,
// under sh.txnAppend so that two groups of one shard do not race for it.
func (c *Coordinator) appendTxn(sh *shard, producer txnProducer, records []record) (int64, error) {
	sh.txnAppend.Lock()
	defer sh.txnAppend.Unlock()
	seq := int32(0)
	for _, pi := range sh.replica.Producers() {
		if pi.ProducerID == producer.id && pi.ProducerEpoch == producer.epoch && pi.LastSequence >= 0 {
			seq = pi.LastSequence + 1
			if pi.LastSequence == math.MaxInt32 {
				seq = 0
			}
		}
	}
	recs := make([]batch.Record, len(records))
	for i, r := range records {
		recs[i] = batch.Record{Key: r.key, Value: r.value}
	}
	opts := batch.NoProducer()
	opts.FirstTimestamp = c.cfg.Now().UnixMilli()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = producer.id, producer.epoch, seq, true
	b, err := batch.Build(nil, opts, recs)
	if err != nil {
		return -1, err
	}
	res, err := sh.replica.AppendLeaderVerified(b, producer.guard)
	switch {
	case errors.Is(err, partition.ErrProducerFenced), errors.Is(err, partition.ErrOutOfOrderSequence), errors.Is(err, partition.ErrInvalidTxnState):
		return -1, fmt.Errorf("appending to %s-%d: %w", OffsetsTopic, sh.partition, err)
	case err != nil:
		// As the coordinator answers its storage errors: the client
		// looks for the coordinator again.
		return -1, fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, OffsetsTopic, sh.partition, err)
	}
	c.noteAppended(sh, len(records))
	return res.LastOffset, nil
}
