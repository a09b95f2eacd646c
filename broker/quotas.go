package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/quota"
)

// startQuotas opens the client quotas in the control plane and has the
// node's quota manager follow them: every node enforces what the bucket
// holds, a change applying within the watch's delivery.
func (n *Node) startQuotas(ctx context.Context) error {
	var err error
	if n.quotaStore, err = controlplane.OpenClientQuotas(ctx, n.nc, n.cfg.NATSReplicas, n.natsMon); err != nil {
		return err
	}
	n.quotas = quota.NewManager(quota.Config{Samples: n.cfg.QuotaWindowNum, Window: n.cfg.QuotaWindowSize,
		OnThrottle: func(t quota.Type, d time.Duration) { n.metrics.ObserveThrottle(t.Name(), d) }})
	return n.quotaStore.Watch(ctx, func(e quota.Entity, v quota.Values) { n.quotas.Set(e, v) })
}

// Quotas exposes the node's quota manager (for tools and tests).
func (n *Node) Quotas() *quota.Manager { return n.quotas }

// requestQuota holds clients to their request_percentage (KIP-124) with
// the handler time the Kafka server measures. Requests of other brokers
// (follower fetches, transaction markers) and of authentication are
// exempt, as Kafka exempts ClusterAction and SASL requests.
type requestQuota struct{ m *quota.Manager }

// Active: no request is timed for the quota while no quota is configured.
func (q requestQuota) Active() bool { return q.m.Any() }

func (q requestQuota) RequestTime(req *kafka.Request, handlerTime time.Duration) time.Duration {
	switch m := req.Msg.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest, *kmsg.WriteTxnMarkersRequest:
		return 0
	case *kmsg.FetchRequest:
		if m.ReplicaID >= 0 {
			return 0
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		if m.ReplicaID >= 0 {
			return 0
		}
	}
	return q.m.RecordTime(quota.UserOf(req.Conn.Principal), req.ClientID, handlerTime, time.Now())
}
