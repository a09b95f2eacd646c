package broker

import (
	"context"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/quota"
)

// startQuotas opens the client quotas in the control plane and has the
// node's quota manager follow them: every node enforces what the bucket
// holds, a change applying within the watch's delivery.
func (n *Node) startQuotas(ctx context.Context) error {
	var err error
	if n.quotaStore, err = controlplane.OpenClientQuotas(ctx, n.nc, n.cfg.NATSReplicas); err != nil {
		return err
	}
	n.quotas = quota.NewManager(quota.Config{Samples: n.cfg.QuotaWindowNum, Window: n.cfg.QuotaWindowSize})
	return n.quotaStore.Watch(ctx, func(e quota.Entity, v quota.Values) { n.quotas.Set(e, v) })
}

// Quotas exposes the node's quota manager (for tools and tests).
func (n *Node) Quotas() *quota.Manager { return n.quotas }
