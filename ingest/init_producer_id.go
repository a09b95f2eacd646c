package ingest

// InitProducerID (key 22), versions 0-4.
//
//   - v2: flexible versions from v2.
//   - v3: ProducerID/ProducerEpoch in the request (KIP-360): a producer that
//     knows its id asks for an epoch bump instead of a new id.
//
// Shale supports idempotent producers, not transactions: a request with a
// transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Producer ids
// are unique across the cluster and across restarts: they come from blocks
// reserved in the control plane (ProducerIDs).

import (
	"context"
	"log/slog"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// ProducerIDs hands out cluster-unique producer ids.
type ProducerIDs interface {
	NextProducerID(ctx context.Context) (int64, error)
}

// RegisterInitProducerID serves InitProducerID on reg.
func RegisterInitProducerID(reg *kafka.Registry, ids ProducerIDs, log *slog.Logger) {
	reg.Register(kmsg.InitProducerID, 0, 4, initProducerIDHandler(ids, log))
}

func initProducerIDHandler(ids ProducerIDs, log *slog.Logger) kafka.Handler {
	return func(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
		r := req.Msg.(*kmsg.InitProducerIDRequest)
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if r.TransactionalID != nil {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return kafka.Reply{Response: resp}, nil
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
