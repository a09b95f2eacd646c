package broker

import (
	"context"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/telemetry"
)

// startTelemetry opens the client metrics subscriptions (KIP-714) in the
// control plane and has the node's telemetry manager follow them; the
// pushed client metrics join the node's /metrics page.
func (n *Node) startTelemetry(ctx context.Context) error {
	var err error
	if n.clientMetrics, err = controlplane.OpenClientMetrics(ctx, n.nc, n.cfg.NATSReplicas, n.natsMon); err != nil {
		return err
	}
	n.telemetry = telemetry.NewManager(telemetry.Config{TelemetryMaxBytes: n.cfg.TelemetryMaxBytes, Logger: n.logger})
	n.metrics.MustRegister(n.telemetry.Collectors()...)
	return n.clientMetrics.Watch(ctx, n.telemetry.SetSubscription)
}

// Telemetry exposes the node's client telemetry manager (for tests).
func (n *Node) Telemetry() *telemetry.Manager { return n.telemetry }

func (n *Node) closeTelemetry() {
	if n.clientMetrics != nil {
		n.clientMetrics.Close()
	}
}
