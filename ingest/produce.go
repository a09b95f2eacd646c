package ingest

// Produce (key 0), versions 3-13.
//
//   - v3: one record batch (magic 2) per partition, transactional id field.
//   - v5: LogStartOffset in the response.
//   - v8: RecordErrors and ErrorMessage in the response (KIP-467).
//   - v9: flexible versions.
//   - v10: leader discovery (KIP-951): a partition answered
//     NOT_LEADER_OR_FOLLOWER carries CurrentLeader (the leader and leader
//     epoch the control plane has, -1 when none), and the response's
//     NodeEndpoints those leaders' endpoints on the client's listener, as
//     Kafka's KafkaApis answers them, so that the producer moves without a
//     Metadata request (produce_discovery.go).
//   - v11: no wire change (TRANSACTION_ABORTABLE may be answered).
//   - v12 (KIP-890 part 2, transactions v2): no wire change; the client
//     sends no AddPartitionsToTxn, and the leader adds the partition to
//     the producer's transaction through the coordinator (TxnVerifier with
//     add) before the batch that opens the transaction here, as Kafka's
//     AddPartitionsToTxnManager does. Below v12 the leader only verifies.
//   - v13: topics named by id (KIP-516); an id that names no live topic is
//     UNKNOWN_TOPIC_ID for each of its partitions.
//
// v13 and the leader hints need ProduceConfig.Directory; without it
// Produce serves up to v12 with the hints left empty.
//
// Transactional batches (KIP-98) are appended like idempotent ones, opening
// the producer's transaction in the partition until the coordinator's marker
// ends it (partition.Replica.AppendTxnMarker). When a TxnVerifier is
// configured, the first transactional batch of a producer's transaction in
// a partition is verified with the transaction coordinator before it is
// appended (KIP-890), so that a late batch of a finished transaction does
// not open a hanging one.
//
// Quotas (with ProduceConfig.Quotas): the request's record bytes count
// against the producer_byte_rate of its user and client id after the
// append, as Kafka records them; a producer over its quota is answered at
// once with throttle_time_ms (v3+ carries it; from v6 the client backs off
// itself, KIP-219) and its connection is muted for that long. acks=0 gets
// no response but the mute holds it the same.
//
// With an authorizer (authz), each topic needs Write on it, else its
// partitions are TOPIC_AUTHORIZATION_FAILED; a transactional produce also
// needs Write on its transactional id, else every partition is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka 3's rules: an idempotent
// producer's IdempotentWrite is checked at InitProducerId only). A request
// with a transactional batch and no transactional id (null or empty) is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED with or without an authorizer, as
// in Kafka: nothing could verify the batch with a coordinator, and it
// would open a transaction that no coordinator ends.
//
// An internal topic (__consumer_offsets, __transaction_state) is
// INVALID_TOPIC_EXCEPTION unless the client id is __admin_client, as Kafka's
// ReplicaManager refuses "append to internal topic": only the coordinators
// write there (through the partition leaders, not through Produce), and a
// client's tombstone or made-up record would be replayed by the next
// coordinator as a group's offsets or a transaction's state.
//
// acks=0 writes no response (later responses keep their order), acks=1
// answers after the local append, acks=all (-1) appends in the handler and
// waits in Reply.Wait until the high watermark passes the batch, so the next
// request on the connection is handled meanwhile. Any other acks value is
// INVALID_REQUIRED_ACKS. A bad batch fails only its own partition. An
// acks=all write not replicated within the request's timeout_ms is
// REQUEST_TIMED_OUT, with an error message (v8+) naming the high watermark,
// the ISR and where each follower stands, also logged at warn.

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/quota"
	"github.com/shale-io/shale/segment/batch"
)

// ProduceObserver receives per-topic ingest figures (metrics). Optional.
type ProduceObserver interface {
	Produced(topic string, bytes, records int)
}

// TxnVerifier checks with the transaction coordinator that a transactional
// producer's transaction includes a partition, before the partition's first
// batch of that transaction is appended (KIP-890's server-side defence
// against hanging transactions). With add (a Produce v12 of transactions
// v2, KIP-890 part 2) it asks the coordinator to add the partition to the
// transaction instead. Its error is translated with kafkaerr's table into
// the partition's error code.
type TxnVerifier interface {
	VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error
}

// ProduceConfig configures the Produce handler. Leaders is required; the
// others may be nil.
type ProduceConfig struct {
	Leaders  partition.Leaders
	Observer ProduceObserver
	Logger   *slog.Logger
	// TxnVerifier, when set, verifies the first transactional batch of a
	// transaction in each partition (see TxnVerifier); nil appends
	// without asking.
	TxnVerifier TxnVerifier
	// Authorizer checks the ACLs; nil allows everything.
	Authorizer *authz.Authorizer
	// Quotas, when set, holds producers to their producer_byte_rate.
	Quotas ByteQuotas
	// Directory, when set, names topics by id (Produce v13) and names the
	// current leader to a producer that asked another node (KIP-951);
	// without it Produce serves up to v12 and leaves those fields empty.
	Directory partition.Directory
}

// ByteQuotas records what a client used against its quota and returns how
// long to throttle it (quota.Manager). Any reports whether some quota is
// configured; while none is, nothing is counted.
type ByteQuotas interface {
	Any() bool
	Record(t quota.Type, user, clientID string, value float64, now time.Time) time.Duration
}

// RegisterProduce serves Produce on reg, without transaction verification.
func RegisterProduce(reg *kafka.Registry, leaders partition.Leaders, obs ProduceObserver, log *slog.Logger) {
	RegisterProduceConfig(reg, ProduceConfig{Leaders: leaders, Observer: obs, Logger: log})
}

// RegisterProduceConfig serves Produce on reg as cfg says.
func RegisterProduceConfig(reg *kafka.Registry, cfg ProduceConfig) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &produceHandler{leaders: cfg.Leaders, obs: cfg.Observer, log: cfg.Logger, verifier: cfg.TxnVerifier, quotas: cfg.Quotas, authz: cfg.Authorizer,
		directory: cfg.Directory}
	maxVersion := int16(12)
	if cfg.Directory != nil {
		maxVersion = 13
	}
	reg.Register(kmsg.Produce, 3, maxVersion, h.handle)
}

type produceHandler struct {
	leaders  partition.Leaders
	obs      ProduceObserver
	log      *slog.Logger
	verifier TxnVerifier
	quotas   ByteQuotas        // nil: no quotas
	authz    *authz.Authorizer // nil: everything allowed
	// directory: topic ids and leader hints; nil serves up to v12.
	directory partition.Directory

	refusedLog kafka.LogLimiter // appends to internal topics refused
}

type pendingAck struct {
	replica *partition.Replica
	last    int64
	epoch   int32 // the leader epoch of the append
	resp    *kmsg.ProduceResponseTopicPartition
}

func (h *produceHandler) handle(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	acks := r.Acks
	validAcks := acks == 0 || acks == 1 || acks == -1
	var pending []pendingAck
	txnDenied := h.refuseTransactional(req, r)
	unknownIDs := h.nameTopics(req.Version, r)
	names := make([]string, 0, len(r.Topics))
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		names = append(names, t.Topic)
		if unknownIDs[t.TopicID] {
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
				rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		topicDenied := !txnDenied && !h.authz.Authorize(req, acl.OpWrite, acl.Topic(t.Topic))
		internal := config.IsInternalTopic(t.Topic) && req.ClientID != config.AdminClientID
		if internal && validAcks && !txnDenied && !topicDenied {
			if ok, held := h.refusedLog.Allow(time.Now()); ok {
				h.log.Warn("produce refused: append to an internal topic", "topic", t.Topic, "client_id", req.ClientID, "suppressed", held)
			}
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			prp := &rt.Partitions[len(rt.Partitions)-1]
			switch {
			case !validAcks:
				prp.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			case txnDenied:
				prp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				continue
			case topicDenied:
				prp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			case internal:
				prp.ErrorCode = kerr.InvalidTopicException.Code
				msg := "cannot append to internal topic " + t.Topic
				prp.ErrorMessage = &msg
				continue
			}
			rep, err := h.leaders.Leader(t.Topic, p.Partition)
			if err == nil && acks == -1 && int64(rep.ISRSize()) < rep.Config().Int64(config.MinInsyncReplicas) {
				err = partition.ErrNotEnoughReplicas
			}
			var guard partition.VerificationGuard
			if err == nil {
				guard, err = h.verifyTxn(ctx, r.TransactionID, rep, t.Topic, p.Partition, p.Records, req.Version >= 12)
			}
			if err != nil {
				prp.ErrorCode = kafkaerr.Code(err)
				continue
			}
			res, err := rep.AppendLeaderVerified(p.Records, guard)
			if err != nil {
				prp.ErrorCode = kafkaerr.Code(err)
				msg := err.Error()
				prp.ErrorMessage = &msg
				if kafkaerr.Table.Unexpected(err) {
					h.log.Error("request failed", "api", "Produce", "topic", t.Topic, "partition", p.Partition, "err", err)
				} else if prp.ErrorCode == kerr.RecordListTooLarge.Code {
					// The producer's batch size and the topic's segment.bytes
					// disagree: only an operator can reconcile them.
					h.log.Warn("produce refused: a record batch larger than segment.bytes", "topic", t.Topic, "partition", p.Partition, "err", err)
				} else {
					h.log.Debug("produce rejected", "topic", t.Topic, "partition", p.Partition, "err", err)
				}
				continue
			}
			prp.BaseOffset, prp.LogAppendTime, prp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
			if h.obs != nil && !res.Duplicate {
				h.obs.Produced(t.Topic, len(p.Records), int(res.LastOffset-res.BaseOffset+1))
			}
			if acks == -1 {
				pending = append(pending, pendingAck{replica: rep, last: res.LastOffset, epoch: res.LeaderEpoch})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	h.recordQuota(req, r)
	switch {
	case acks == 0:
		return kafka.Reply{NoResponse: true}, nil
	case len(pending) == 0:
		h.discover(req, names, resp)
		return kafka.Reply{Response: resp}, nil
	}
	// Point the pending acks at their response entries now that the slices are final.
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if i < len(pending) && rp.ErrorCode == 0 && rp.BaseOffset >= 0 {
				pending[i].resp = rp
				i++
			}
		}
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, pa := range pending {
			if err := pa.replica.WaitCommitted(wctx, pa.last, pa.epoch); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				pa.resp.ErrorCode = kafkaerr.Code(err)
				if err == context.DeadlineExceeded {
					pa.resp.ErrorCode = kerr.RequestTimedOut.Code
					// Say what the write waits for: a follower that never
					// fetches, an ISR that does not shrink, a lost role.
					why := pa.replica.DescribeCommitWait(pa.last, time.Now())
					msg := "acks=all: not replicated within the request's timeout; " + why
					pa.resp.ErrorMessage = &msg
					h.log.Warn("acks=all produce timed out waiting for replication", "topic", pa.replica.Topic(),
						"partition", pa.replica.Partition(), "timeout", timeout, "state", why)
				}
			}
		}
		h.discover(req, names, resp)
		return resp, nil
	}}, nil
}

// refuseTransactional reports whether every partition of r is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED: its transactional id lacks Write,
// or it carries a transactional batch without a transactional id. Kafka
// refuses the latter even with no authorizer: such a batch would open a
// transaction in the partition that no coordinator knows, which nothing
// ends (the last stable offset stays there), or, with another producer's
// id at a higher epoch, fence that producer's markers.
func (h *produceHandler) refuseTransactional(req *kafka.Request, r *kmsg.ProduceRequest) bool {
	if r.TransactionID != nil && *r.TransactionID != "" {
		return !h.authz.Authorize(req, acl.OpWrite, acl.TransactionalID(*r.TransactionID))
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			// One batch per partition: the log refuses more (ErrOneBatch).
			if hd, err := batch.ParseHeader(p.Records); err == nil && hd.Transactional() {
				h.log.Info("produce refused: a transactional batch without a transactional id", "client_id", req.ClientID,
					"principal", req.Conn.Principal, "topic", t.Topic, "partition", p.Partition, "producer_id", hd.ProducerID,
					"producer_epoch", hd.ProducerEpoch)
				return true
			}
		}
	}
	return false
}

// recordQuota counts the request's record bytes against its producer's
// quota and throttles the request when the producer is over it.
func (h *produceHandler) recordQuota(req *kafka.Request, r *kmsg.ProduceRequest) {
	if h.quotas == nil || !h.quotas.Any() {
		return
	}
	n := 0
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			n += len(p.Records)
		}
	}
	req.Throttle(h.quotas.Record(quota.Produce, quota.UserOf(req.Conn.Principal), req.ClientID, float64(n), time.Now()))
}

// verifyTxn asks the TxnVerifier, if any, about a transactional batch that
// would open its producer's transaction in the partition, and returns the
// guard to append it with (zero when nothing was verified): a marker
// written for the producer meanwhile voids it (partition.VerificationGuard).
// add is transactions v2's implicit add (Produce v12).
func (h *produceHandler) verifyTxn(ctx context.Context, txnID *string, rep *partition.Replica, topic string, part int32, records []byte, add bool) (partition.VerificationGuard, error) {
	if h.verifier == nil || txnID == nil {
		return 0, nil
	}
	hd, err := batch.ParseHeader(records)
	if err != nil || !hd.Transactional() || hd.Control() {
		return 0, nil // AppendLeader judges the batch itself
	}
	if rep.HasOpenTxn(hd.ProducerID, hd.ProducerEpoch) {
		// No need to ask; but should a marker end the transaction before
		// the append, the batch must not open another one unverified.
		return partition.NotVerified, nil
	}
	var guard partition.VerificationGuard
	if add {
		guard = rep.StartVerificationV2(hd.ProducerID, hd.ProducerEpoch)
	} else {
		guard = rep.StartVerification(hd.ProducerID)
	}
	return guard, h.verifier.VerifyTxn(ctx, *txnID, hd.ProducerID, hd.ProducerEpoch, topic, part, add)
}
