package group

// TxnOffsetCommit (key 28), versions 0-6.
//
//   - A transactional producer commits the offsets it consumed as part of
//     its transaction (KIP-98): the offsets are appended to the group's
//     __consumer_offsets partition in a transactional batch of the
//     producer (its id and epoch), acks=all, and stay pending until the
//     transaction's marker reaches the partition: a COMMIT applies them
//     (what OffsetFetch answers), an ABORT drops them. A partition with a
//     pending transactional offset answers OffsetFetch with RequireStable
//     UNSTABLE_OFFSET_COMMIT (KIP-447).
//   - v2: LeaderEpoch per partition.  v3: flexible versions; GroupInstanceID,
//     MemberID and Generation (KIP-447): with a member id or a generation
//     the member must be the group's, of its generation
//     (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID), so that
//     a zombie that lost its partitions in a rebalance cannot commit.
//     Without them (generation -1) any producer may commit, as with a
//     simple OffsetCommit. A member of a KIP-848 consumer group sends its
//     member epoch as the generation, checked as OffsetCommit v9 checks it
//     (a stale epoch answered ILLEGAL_GENERATION).
//   - v4: as v3 (Kafka adds TRANSACTION_ABORTABLE to its errors).
//   - v0-v4 (KIP-890 part 1): unless the producer's transaction is open
//     in the group's offsets partition already, the coordinator verifies
//     with the transaction coordinator (TxnPartitionAdder, verify only)
//     that the partition is in the producer's ongoing transaction before
//     the batch that opens it there is appended, as the produce path
//     does: a made-up producer id, one the transactional id does not own
//     (INVALID_PRODUCER_ID_MAPPING), or a late retry of a transaction
//     that ended (INVALID_TXN_STATE, KAFKA-14402) would otherwise open a
//     transaction that no coordinator ends, which stops the partition's
//     compaction and answers RequireStable fetches
//     UNSTABLE_OFFSET_COMMIT forever. A stale epoch is
//     INVALID_PRODUCER_EPOCH, as Kafka's leader answers it.
//   - v5 (KIP-890 part 2, transactions v2): the client sends no
//     AddOffsetsToTxn; before appending, the coordinator has the
//     transaction coordinator add the group's offsets partition to the
//     producer's transaction (TxnPartitionAdder, as Kafka's group
//     coordinator does through AddPartitionsToTxnManager); its refusal
//     (INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING,
//     INVALID_TXN_STATE) is every partition's error, and
//     COORDINATOR_NOT_AVAILABLE (retried) while it cannot answer.
//   - v6: topics by TopicID instead of name (the answer names them by id
//     too); an id no topic has is UNKNOWN_TOPIC_ID for its partitions, not
//     committed. Offsets are kept by topic name, as for v0-v5, so
//     OffsetFetch answers them whichever version committed them. A
//     member's commit (a member id or a generation) to a group that does
//     not exist is GROUP_ID_NOT_FOUND, where v0-v5 answer
//     ILLEGAL_GENERATION (KIP-1319).
//
// The transaction coordinator checks the producer when it verifies; once
// the producer's transaction is open in the partition, the partition's
// producer state refuses an older epoch: PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3).
//
// With an authorizer it needs Write on the transactional id (else every
// partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Read on the group
// (GROUP_AUTHORIZATION_FAILED) and Read on each topic (its partitions
// TOPIC_AUTHORIZATION_FAILED, not committed).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

func (c *Coordinator) handleTxnOffsetCommit(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.TxnOffsetCommitRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		ct := c.resolveCommitTopics(req.Version >= 6, len(r.Topics), func(i int) (string, topicID) { return r.Topics[i].Topic, r.Topics[i].TopicID })
		failAll := func(code int16) kmsg.Response {
			resp.Topics = resp.Topics[:0]
			for _, t := range r.Topics {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		if r.Group == "" {
			return failAll(kerr.InvalidGroupID.Code), nil
		}
		if !c.allowed(req, acl.OpWrite, acl.TransactionalID(r.TransactionalID)) {
			return failAll(kerr.TransactionalIDAuthorizationFailed.Code), nil
		}
		if !c.allowed(req, acl.OpRead, acl.Group(r.Group)) {
			return failAll(kerr.GroupAuthorizationFailed.Code), nil
		}
		ct.deny(req)
		cr := commitRequest{memberID: "", generation: -1, topicIDs: ct.topicIDs()}
		if req.Version >= 3 {
			cr.memberID, cr.instanceID, cr.generation = r.MemberID, r.InstanceID, r.Generation
		}
		simple := cr.memberID == "" && cr.generation < 0
		rn, err := c.lookup(r.Group, simple)
		switch {
		case err != nil:
			return failAll(errorCode(err)), nil
		case rn == nil && req.Version >= 6:
			return failAll(kerr.GroupIDNotFound.Code), nil // a member's commit to a group that does not exist
		case rn == nil:
			return failAll(kerr.IllegalGeneration.Code), nil // what v0-v5 answer for it
		}
		for i, t := range r.Topics {
			for _, p := range t.Partitions {
				if ct.refused(i, p.Partition) != 0 {
					continue // answered UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED or UNKNOWN_TOPIC_OR_PARTITION, not committed
				}
				cr.offsets = append(cr.offsets, newCommitOffset(ct.names[i], p.Partition, p.Offset, p.LeaderEpoch, req.Version >= 2, p.Metadata))
			}
		}
		guard, code := c.verifyOffsetsPartition(ctx, r, req.Version >= 5)
		if code != 0 {
			return failAll(code), nil
		}
		producer := txnProducer{id: r.ProducerID, epoch: r.ProducerEpoch, guard: guard}
		return c.call(ctx, rn, func(g *group, send replyFn) {
			codes, hw := g.txnCommit(cr, producer)
			answer := ct.answers(codes)
			failAll(0)
			for ti, t := range resp.Topics {
				for pi, p := range t.Partitions {
					code := answer(ti, p.Partition) // a refused partition's code is never INVALID_PRODUCER_EPOCH
					if code == kerr.InvalidProducerEpoch.Code && req.Version >= 3 {
						code = kerr.ProducerFenced.Code
					}
					resp.Topics[ti].Partitions[pi].ErrorCode = code
				}
			}
			send(resp, hw)
		}, func() kmsg.Response { return failAll(kerr.NotCoordinator.Code) })
	}}, nil
}

// TxnPartitionAdder adds a partition to a producer's transaction through
// its transaction coordinator (package txn's Verifier with add): how
// TxnOffsetCommit v5 puts the group's offsets partition in the
// transaction. Its error wraps a kerr error: NOT_ENOUGH_REPLICAS when the
// coordinator cannot answer now.
type TxnPartitionAdder interface {
	VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error
}

// SetTxnPartitionAdder serves TxnOffsetCommit v5 with a. Safe to call
// while serving.
func (c *Coordinator) SetTxnPartitionAdder(a TxnPartitionAdder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.txnAdder = a
}

// verifyOffsetsPartition checks with the producer's transaction
// coordinator that r's group's offsets partition is in the producer's
// ongoing transaction (v0-v4, KIP-890 part 1), or adds it (add: v5,
// KIP-890 part 2), as the produce path does for a batch that would open
// the producer's transaction in a partition. It returns the guard to
// append with (partition.VerificationGuard) and 0, or the code to answer:
// the coordinator's refusal (INVALID_PRODUCER_ID_MAPPING for a producer
// id the transactional id does not own, INVALID_TXN_STATE for a
// partition outside the transaction, INVALID_PRODUCER_EPOCH for a stale
// epoch), COORDINATOR_NOT_AVAILABLE while it cannot answer, and
// NOT_COORDINATOR when this node no longer leads the partition.
func (c *Coordinator) verifyOffsetsPartition(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, add bool) (partition.VerificationGuard, int16) {
	c.mu.Lock()
	a := c.mu.txnAdder
	c.mu.Unlock()
	if a == nil {
		if add {
			return 0, kerr.CoordinatorNotAvailable.Code // transactions are not served
		}
		return 0, 0 // no transaction coordinator to ask (a coordinator alone, in unit tests)
	}
	p := PartitionFor(r.Group, c.cfg.Partitions)
	rep, err := c.leaders.Leader(OffsetsTopic, p)
	if err != nil {
		return 0, kerr.NotCoordinator.Code
	}
	var guard partition.VerificationGuard
	switch {
	case !add && rep.HasOpenTxn(r.ProducerID, r.ProducerEpoch):
		// Verified when it opened; should a marker end it before the
		// append, the batch must not open another one unverified.
		return partition.NotVerified, 0
	case add:
		guard = rep.StartVerificationV2(r.ProducerID, r.ProducerEpoch)
	default:
		guard = rep.StartVerification(r.ProducerID)
	}
	err = a.VerifyTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, OffsetsTopic, p, add)
	var ke *kerr.Error
	switch {
	case err == nil:
		return guard, 0
	case errors.Is(err, kerr.NotEnoughReplicas), !errors.As(err, &ke):
		return 0, kerr.CoordinatorNotAvailable.Code
	}
	return 0, ke.Code
}
