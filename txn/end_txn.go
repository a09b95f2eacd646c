package txn

// EndTxn (key 26), versions 0-4.
//
//   - Commit or abort the producer's ongoing transaction: PrepareCommit
//     (or PrepareAbort) is written to __transaction_state with acks=all
//     and answered; the markers are then written to every partition of
//     the transaction in the background, and CompleteCommit (or
//     CompleteAbort) after them. A retry of an EndTxn that completed is
//     answered as it was; a commit of a transaction being aborted, or the
//     reverse, gets INVALID_TXN_STATE, and a repeat of one still
//     completing CONCURRENT_TRANSACTIONS.
//   - v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before).  v3: flexible
//     versions.
//   - v5 (KIP-890 part 2: an epoch bump at each end) is not served, so
//     clients keep adding partitions explicitly.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleEndTxn(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.EndTxnRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		if err := c.endTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit); err != nil {
			resp.ErrorCode = fencedCode(err, req.Version, 2)
		}
		return resp, nil
	}}, nil
}
