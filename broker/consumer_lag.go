package broker

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/metrics"
	"github.com/shale-io/shale/lag"
)

// startLagSampler starts the consumer-lag sampler of the groups this node
// coordinates (consumer_lag_sample_interval; 0 starts none). It talks to
// the cluster as the other nodes do, through the inter-broker dialer.
func (n *Node) startLagSampler(ctx context.Context) {
	if n.cfg.ConsumerLagSampleInterval <= 0 {
		return
	}
	advertise := n.cfg.Advertise
	n.lag = lag.New(lag.Config{NodeID: n.cfg.NodeID, Seeds: func() []string { return []string{advertise} },
		Opts: n.interBroker.KgoOpts(), Interval: n.cfg.ConsumerLagSampleInterval, Logger: n.logger.With("component", "lag")})
	n.goLoop(func() { n.lag.Run(ctx) })
}

// consumerLagState is the last sample for the metrics, nil before one.
func (n *Node) consumerLagState() *metrics.ConsumerLagSample {
	if n.lag == nil {
		return nil
	}
	smp := n.lag.Latest()
	if smp.At.IsZero() {
		return nil
	}
	out := &metrics.ConsumerLagSample{At: float64(smp.At.UnixNano()) / 1e9, Groups: make([]metrics.ConsumerGroupLag, 0, len(smp.Groups))}
	for _, g := range smp.Groups {
		if g.Type == "share" {
			continue // kafka_consumergroup_* are consumer groups'; share groups have shale_share_partition_lag
		}
		mg := metrics.ConsumerGroupLag{Group: g.Group, Members: g.Members, Partitions: make([]metrics.ConsumerPartitionLag, 0, len(g.Partitions))}
		for _, p := range g.Partitions {
			mg.Partitions = append(mg.Partitions, metrics.ConsumerPartitionLag{Topic: p.Topic, Partition: p.Partition,
				Committed: p.Committed, Lag: p.Lag, TimeLagSeconds: p.TimeLagSeconds})
		}
		out.Groups = append(out.Groups, mg)
	}
	return out
}

// consumerLagHandler serves GET /v1/groups/lag: the last sample, each
// group with its recent totals; ?group=G restricts it to one group.
func (n *Node) consumerLagHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		if n.lag == nil {
			http.Error(w, "consumer lag sampling is off (consumer_lag_sample_interval: 0)", http.StatusNotFound)
			return
		}
		smp := n.lag.Latest()
		out := adminapi.ConsumerLag{NodeID: n.cfg.NodeID, At: smp.At, Groups: []adminapi.ConsumerGroupLag{}}
		only := r.URL.Query().Get("group")
		for _, g := range smp.Groups {
			if only != "" && g.Group != only {
				continue
			}
			g.History = n.lag.History(g.Group)
			out.Groups = append(out.Groups, g)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
}
