package txn

// AddOffsetsToTxn (key 25), versions 0-4.
//
//   - The group's __consumer_offsets partition joins the producer's
//     transaction, so that the coordinator writes its marker there and the
//     group applies (or drops) the transaction's offsets (TxnOffsetCommit)
//     when the transaction ends.
//   - v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before).  v3: flexible
//     versions.  v4 (KIP-890 part 2): as v3, from a transactions v2
//     client (which usually leaves the add to TxnOffsetCommit v5).
//
// Errors as AddPartitionsToTxn's.
//
// With an authorizer it needs Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and Read on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleAddOffsetsToTxn(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AddOffsetsToTxnRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		if r.Group == "" {
			resp.ErrorCode = kerr.InvalidGroupID.Code
			return resp, nil
		}
		if !c.cfg.Authorizer.Authorize(req, authz.OpWrite, authz.TransactionalID(r.TransactionalID)) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
		if !c.cfg.Authorizer.Authorize(req, authz.OpRead, authz.Group(r.Group)) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		n, ok := c.cluster.Partitions(group.OffsetsTopic)
		if !ok {
			// The group's coordinator creates the offsets topic; the
			// client retries once it found it.
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		tp := TopicPartition{group.OffsetsTopic, group.PartitionFor(r.Group, n)}
		tv := int16(0)
		if req.Version >= 4 {
			tv = 2
		}
		if err := c.addPartitions(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []TopicPartition{tp}, tv); err != nil {
			resp.ErrorCode = fencedCode(err, req.Version, 2)
		}
		return resp, nil
	}}, nil
}
