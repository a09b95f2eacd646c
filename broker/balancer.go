package broker

import (
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/metrics"
)

// balancerConfig is the controller's replica balancer as the node's
// configuration sets it, with this node's local replica sizes as the cost
// estimate and the metrics as the pass hook.
func (n *Node) balancerConfig() controlplane.BalancerConfig {
	return controlplane.BalancerConfig{
		Enable:     n.cfg.BalancerEnable,
		MaxMoves:   n.cfg.BalancerMaxMoves,
		Skew:       n.cfg.BalancerReplicaSkew,
		Interval:   n.cfg.BalancerInterval,
		LocalSizes: n.localReplicaSizes,
		OnPass:     n.observeBalancerPass,
	}
}

// localReplicaSizes reports the bytes of each local replica's segments: a
// move of the partition copies about that much (a new replica rebuilds
// what is older than the leader's local log start from the remote tail).
func (n *Node) localReplicaSizes() map[controlplane.PartitionKey]int64 {
	if n.replicas == nil {
		return nil
	}
	out := map[controlplane.PartitionKey]int64{}
	for _, rep := range n.replicas.All() {
		out[controlplane.PartitionKey{Topic: rep.Topic(), Partition: rep.Partition()}] = rep.Log().Size()
	}
	return out
}

func (n *Node) observeBalancerPass(p controlplane.BalancePass) {
	mp := metrics.BalancerPass{Planned: len(p.Plan.Moves) + p.Plan.Pending, Running: p.Plan.InFlight, Skew: p.Plan.Skew(),
		Started: map[string]int{}, Finished: p.Finished, Bytes: p.StartedBytes, BalancedAfter: p.BalancedAfter}
	for k, v := range p.Started {
		mp.Started[string(k)] = v
	}
	for _, l := range p.Plan.Load {
		mp.Brokers = append(mp.Brokers, metrics.BrokerLoad{Broker: l.Broker, Replicas: l.Replicas, Leaders: l.Leaders})
	}
	n.metrics.ObserveBalancerPass(mp)
}
