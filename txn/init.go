package txn

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID serves InitProducerId for a transactional id (Kafka's
// handleInitProducerId): a new id gets a fresh producer id at epoch 0; a
// known one gets its epoch bumped (a new producer id when the epoch is
// exhausted), which fences every older producer of the id. An ongoing
// transaction is first aborted with a bumped epoch, and the call answers
// ErrConcurrentTransactions until the abort completes; the client retries.
// With reqPID >= 0 (KIP-360) the producer must be the id's current one at
// its current or previous epoch, else ErrProducerFenced.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, reqPID int64, reqEpoch int16) (int64, int16, error) {
	if id == "" {
		return -1, -1, ErrInvalidRequest
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return -1, -1, fmt.Errorf("%w: %d ms, transaction.max.timeout.ms is %d", ErrInvalidTimeout, timeoutMs, c.cfg.MaxTimeout.Milliseconds())
	}
	sh, err := c.lookup(id)
	if err != nil {
		return -1, -1, err
	}
	sh.mu.Lock()
	cur := sh.mu.txns[id]
	sh.mu.Unlock()
	newPID := int64(-1)
	if cur == nil || cur.epochExhausted() {
		if newPID, err = c.pids.NextProducerID(ctx); err != nil {
			return -1, -1, fmt.Errorf("%w: allocating a producer id: %w", ErrCoordinatorNotAvailable, err)
		}
	}
	next, err := c.write(ctx, sh, id, func(cur *txnMeta) (*txnMeta, error) {
		if cur == nil {
			if newPID < 0 {
				return nil, ErrConcurrentTransactions // created meanwhile; the retry bumps it
			}
			return &txnMeta{id: id, producerID: newPID, prevProducerID: -1, nextProducerID: -1, epoch: 0, lastEpoch: -1, timeoutMs: timeoutMs,
				state: kmsg.TransactionStateEmpty, partitions: map[TopicPartition]struct{}{}, start: -1}, nil
		}
		if !cur.validProducer(reqPID, reqEpoch) {
			return nil, ErrProducerFenced
		}
		switch cur.state {
		case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
			return nil, ErrConcurrentTransactions
		case kmsg.TransactionStateOngoing:
			return cur.fenceAndAbort(), nil
		case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		default:
			return nil, fmt.Errorf("%w: %s", ErrInvalidTxnState, cur.state)
		}
		n, ok := cur.bumped(newPID)
		if !ok {
			return nil, ErrConcurrentTransactions // the epoch ran out meanwhile; the retry takes a new id
		}
		n.state, n.timeoutMs, n.start = kmsg.TransactionStateEmpty, timeoutMs, -1
		n.partitions = map[TopicPartition]struct{}{}
		return n, nil
	})
	if err != nil {
		return -1, -1, err
	}
	if next.state == kmsg.TransactionStatePrepareAbort {
		c.startCompletion(sh, next)
		return -1, -1, fmt.Errorf("%w: aborting the open transaction of %q first", ErrConcurrentTransactions, id)
	}
	return next.producerID, next.epoch, nil
}

// addPartitions adds tps to id's transaction (AddPartitionsToTxn,
// AddOffsetsToTxn, and the implicit adds of transactions v2 with tv 2),
// starting one when none is ongoing.
func (c *Coordinator) addPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []TopicPartition, tv int16) error {
	sh, err := c.lookup(id)
	if err != nil {
		return err
	}
	now := c.cfg.Now().UnixMilli()
	_, err = c.write(ctx, sh, id, func(cur *txnMeta) (*txnMeta, error) {
		if err := cur.checkProducer(pid, epoch); err != nil {
			return nil, err
		}
		return cur.addPartitions(tps, now, tv)
	})
	return err
}

// verifyPartitions checks that every partition of tps is in id's ongoing
// transaction (AddPartitionsToTxn v4 verify-only, KIP-890): an error per
// partition that is not.
func (c *Coordinator) verifyPartitions(id string, pid int64, epoch int16, tps []TopicPartition) (map[TopicPartition]error, error) {
	sh, err := c.lookup(id)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur := sh.mu.txns[id]
	if err := cur.checkProducer(pid, epoch); err != nil {
		return nil, err
	}
	out := map[TopicPartition]error{}
	for _, tp := range tps {
		if _, ok := cur.partitions[tp]; !ok || cur.state != kmsg.TransactionStateOngoing {
			out[tp] = ErrInvalidTxnState
		}
	}
	return out, nil
}

// endTxn prepares the commit or abort of id's transaction and, once that
// is replicated, sends its markers in the background. With v2 (EndTxn v5,
// KIP-890 part 2) the end bumps the epoch (endV2), and it returns the
// producer id and epoch the client continues with; -1, -1 otherwise.
func (c *Coordinator) endTxn(ctx context.Context, id string, pid int64, epoch int16, commit, v2 bool) (int64, int16, error) {
	sh, err := c.lookup(id)
	if err != nil {
		return -1, -1, err
	}
	newPID := int64(-1)
	if v2 {
		sh.mu.Lock()
		cur := sh.mu.txns[id]
		sh.mu.Unlock()
		if cur != nil && cur.epochExhausted() && cur.epoch < math.MaxInt16 {
			if newPID, err = c.pids.NextProducerID(ctx); err != nil {
				return -1, -1, fmt.Errorf("%w: allocating a producer id: %w", ErrCoordinatorNotAvailable, err)
			}
		}
	}
	now := c.cfg.Now().UnixMilli()
	next, err := c.write(ctx, sh, id, func(cur *txnMeta) (*txnMeta, error) {
		if v2 {
			return cur.endV2(pid, epoch, commit, newPID, now)
		}
		if err := cur.checkProducer(pid, epoch); err != nil {
			return nil, err
		}
		return cur.end(commit)
	})
	if err != nil {
		return -1, -1, err
	}
	if next.preparing() {
		c.startCompletion(sh, next)
	}
	if !v2 {
		return -1, -1, nil
	}
	npid, nepoch := next.nextProducer()
	return npid, nepoch, nil
}
