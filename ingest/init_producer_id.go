package ingest

// InitProducerID (key 22), versions 0-5.
//
//   - v2: flexible versions from v2.
//   - v3: ProducerID/ProducerEpoch in the request (KIP-360): a producer that
//     knows its id asks for an epoch bump instead of a new id.
//   - v4: PRODUCER_FENCED may be answered (below).
//   - v5 (KIP-890): TRANSACTION_ABORTABLE may be answered; no field
//     changes, and Shale's coordinator has no case that answers it.
//
// Without a transactional id: an idempotent producer. With one (KIP-98),
// the transaction coordinator of the id answers (TxnCoordinator, package
// txn): a fresh producer id, or the id's own with its epoch bumped, which
// fences the previous producer and aborts its open transaction first
// (CONCURRENT_TRANSACTIONS until that abort completes); INVALID_REQUEST
// for an empty id, INVALID_TRANSACTION_TIMEOUT for a timeout outside
// (0, transaction.max.timeout.ms], NOT_COORDINATOR, and PRODUCER_FENCED
// (v4; INVALID_PRODUCER_EPOCH before) for a KIP-360 bump by a producer that
// is not the id's current one. Without a coordinator (nil) a transactional
// id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Producer ids are unique
// across the cluster and across restarts: they come from blocks reserved
// in the control plane (ProducerIDs).
//
// With an authorizer (authz): a transactional id needs Write on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
// IdempotentWrite on the cluster or Write on any topic (KIP-679),
// else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"log/slog"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// ProducerIDs hands out cluster-unique producer ids.
type ProducerIDs interface {
	NextProducerID(ctx context.Context) (int64, error)
}

// TxnCoordinator is the transaction coordinator (package txn) as
// InitProducerId uses it.
type TxnCoordinator interface {
	// InitProducerID returns the producer id and epoch of transactional
	// id, or an error that ErrorCode translates.
	InitProducerID(ctx context.Context, id string, timeoutMs int32, producerID int64, epoch int16) (int64, int16, error)
	ErrorCode(err error) int16
}

// RegisterInitProducerID serves InitProducerID on reg. txns may be nil
// (no transactions), and az (no authorizer: everything allowed).
func RegisterInitProducerID(reg *kafka.Registry, ids ProducerIDs, txns TxnCoordinator, az *authz.Authorizer, log *slog.Logger) {
	reg.Register(kmsg.InitProducerID, 0, 5, initProducerIDHandler(ids, txns, az, log))
}

func initProducerIDHandler(ids ProducerIDs, txns TxnCoordinator, az *authz.Authorizer, log *slog.Logger) kafka.Handler {
	return func(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
		r := req.Msg.(*kmsg.InitProducerIDRequest)
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if r.TransactionalID != nil && !az.Authorize(req, acl.OpWrite, acl.TransactionalID(*r.TransactionalID)) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return kafka.Reply{Response: resp}, nil
		}
		if r.TransactionalID == nil && !az.AuthorizeAny(req, acl.OpWrite, acl.ResourceTopic) &&
			!az.Authorize(req, acl.OpIdempotentWrite, acl.Cluster) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return kafka.Reply{Response: resp}, nil
		}
		if r.TransactionalID != nil {
			if txns == nil {
				resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				return kafka.Reply{Response: resp}, nil
			}
			pid, epoch := int64(-1), int16(-1)
			if req.Version >= 3 {
				pid, epoch = r.ProducerID, r.ProducerEpoch
			}
			return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
				id, ep, err := txns.InitProducerID(ctx, *r.TransactionalID, r.TransactionTimeoutMillis, pid, epoch)
				if err != nil {
					resp.ErrorCode = txns.ErrorCode(err)
					if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 4 {
						resp.ErrorCode = kerr.InvalidProducerEpoch.Code
					}
					return resp, nil
				}
				resp.ProducerID, resp.ProducerEpoch = id, ep
				return resp, nil
			}}, nil
		}
		// KIP-360: an idempotent producer with a known id bumps its epoch,
		// which resets its sequences on every partition.
		if r.ProducerID >= 0 && r.ProducerEpoch >= 0 && r.ProducerEpoch < math.MaxInt16-1 {
			resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
			return kafka.Reply{Response: resp}, nil
		}
		id, err := ids.NextProducerID(ctx)
		if err != nil {
			log.Warn("allocating a producer id failed", "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return kafka.Reply{Response: resp}, nil
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return kafka.Reply{Response: resp}, nil
	}
}
