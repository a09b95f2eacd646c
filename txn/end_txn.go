package txn

// EndTxn (key 26), versions 0-5.
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
//   - v5: transactions v2 (KIP-890 part 2), the client's transaction
//     version being the request's, as in Kafka: every end bumps the
//     producer epoch (the Prepare state and the markers carry the bumped
//     epoch, so the producer's late batches of the ended transaction are
//     fenced), and the response's ProducerID and ProducerEpoch are what
//     the client continues with: a new producer id at epoch 0 once the
//     epoch would pass 32766. A retry at the epoch before the current one
//     is recognised as the retry of an end that happened (answered as it
//     was, or CONCURRENT_TRANSACTIONS while its markers are written), an
//     abort with no partition in the transaction is served (the client's
//     produces failed), and the other rules are Kafka's table (txnMeta's
//     endV2).
//
// With an authorizer it needs Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleEndTxn(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.EndTxnRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		if !c.cfg.Authorizer.Authorize(req, acl.OpWrite, acl.TransactionalID(r.TransactionalID)) {
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
			return resp, nil
		}
		pid, epoch, err := c.endTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, req.Version >= 5)
		if err != nil {
			resp.ErrorCode = fencedCode(err, req.Version, 2)
			pid, epoch = -1, -1
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		return resp, nil
	}}, nil
}
