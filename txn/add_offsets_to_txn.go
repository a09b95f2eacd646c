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
// The group's __consumer_offsets partition is PartitionFor(group,
// offsets.topic.num.partitions), the group coordinator's own; the topic is
// created as on FindCoordinator when it does not exist yet (a node where
// no group was ever used), COORDINATOR_NOT_AVAILABLE when that fails.
// Other errors as AddPartitionsToTxn's.
//
// With an authorizer it needs Write on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and Read on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/coordinator"
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
		if !c.cfg.Authorizer.Authorize(req, acl.OpWrite, acl.TransactionalID(r.TransactionalID)) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
		if !c.cfg.Authorizer.Authorize(req, acl.OpRead, acl.Group(r.Group)) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		// The offsets topic comes into being here as on FindCoordinator: a
		// transaction may send offsets before any group was ever used.
		n, err := c.cluster.EnsureOffsetsTopic(ctx)
		if err != nil {
			c.log.Warn("AddOffsetsToTxn: no offsets topic", "transactional_id", r.TransactionalID, "group", r.Group, "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		tp := TopicPartition{coordinator.OffsetsTopic, coordinator.PartitionFor(r.Group, n)}
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
