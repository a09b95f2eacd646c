package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/shale-io/shale/adminapi"
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

// mountBalancer mounts the balancer's admin endpoints (adminapi.BalancePath,
// DecommissionPath, RecommissionPath).
func (n *Node) mountBalancer(mux *http.ServeMux) {
	mux.HandleFunc(adminapi.BalancePath, n.serveBalancePlan)
	mux.HandleFunc(adminapi.DecommissionPath, func(w http.ResponseWriter, r *http.Request) {
		n.serveDrainChange(w, r, n.store.Decommission)
	})
	mux.HandleFunc(adminapi.RecommissionPath, func(w http.ResponseWriter, r *http.Request) {
		n.serveDrainChange(w, r, n.store.Recommission)
	})
}

// serveBalancePlan answers the plan a balancer pass would run now, from
// this node's view (PlanBalance is the controller's own function).
func (n *Node) serveBalancePlan(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	maxMoves := n.cfg.BalancerMaxMoves
	if s := r.URL.Query().Get("max_moves"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 1000 {
			http.Error(w, fmt.Sprintf("max_moves %q: want 1..1000", s), http.StatusBadRequest)
			return
		}
		maxMoves = v
	}
	out, err := n.balancePlan(r.Context(), maxMoves)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeAdminJSON(w, out)
}

// balancePlan is the plan a balancer pass would run now with maxMoves, from
// this node's view (PlanBalance is the controller's own function).
func (n *Node) balancePlan(ctx context.Context, maxMoves int) (adminapi.BalancePlan, error) {
	draining, _, err := n.store.Draining(ctx)
	if err != nil {
		return adminapi.BalancePlan{}, err
	}
	parts, v := n.store.BalanceView(draining, n.localReplicaSizes(), maxMoves, n.cfg.BalancerReplicaSkew)
	plan := controlplane.PlanBalance(parts, v)
	out := adminapi.BalancePlan{Enabled: n.cfg.BalancerEnable, MaxMoves: maxMoves, Skew: n.cfg.BalancerReplicaSkew,
		Draining: controlplane.DrainingIDs(draining), Brokers: []adminapi.BrokerLoad{}, Moves: []adminapi.BalanceMove{},
		InFlight: plan.InFlight, Pending: plan.Pending, Blocked: plan.Blocked, ReplicaSkew: plan.Skew(), Balanced: plan.Balanced()}
	if out.Draining == nil {
		out.Draining = []int32{}
	}
	if out.Blocked == nil {
		out.Blocked = []string{}
	}
	for _, l := range plan.Load {
		out.Brokers = append(out.Brokers, adminapi.BrokerLoad{Broker: l.Broker, Rack: l.Rack, Replicas: l.Replicas, Leaders: l.Leaders,
			Preferred: l.Preferred, Host: l.Host, Draining: l.Draining})
	}
	for _, m := range plan.Moves {
		target := m.Replicas
		if target == nil {
			target = []int32{}
		}
		out.Moves = append(out.Moves, adminapi.BalanceMove{Kind: string(m.Kind), Topic: m.Topic, Partition: m.Partition, From: m.From,
			To: m.To, Replicas: m.State.Replicas, Target: target, Bytes: m.Bytes})
	}
	return out, nil
}

// maxDrainRequestBytes bounds a DrainRequest body.
const maxDrainRequestBytes = 64 << 10

// serveDrainChange decodes a DrainRequest and applies change
// (Store.Decommission or Recommission) to its brokers. A refusal answers
// 400 (unknown broker, a drain that cannot finish, a bad body) or 409 (a
// concurrent change kept winning) with the reason, and changes nothing.
func (n *Node) serveDrainChange(w http.ResponseWriter, r *http.Request, change func(context.Context, []int32) (map[int32]bool, error)) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var req adminapi.DrainRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxDrainRequestBytes)).Decode(&req); err != nil {
		http.Error(w, "body: want {\"brokers\": [ids]}: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.Brokers) == 0 {
		http.Error(w, "no broker named", http.StatusBadRequest)
		return
	}
	seen := map[int32]bool{}
	for _, id := range req.Brokers {
		if id < 0 || seen[id] {
			http.Error(w, fmt.Sprintf("broker %d: named twice or negative", id), http.StatusBadRequest)
			return
		}
		seen[id] = true
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	draining, err := change(ctx, req.Brokers)
	switch {
	case err == nil:
		n.logger.Info("draining brokers changed by the admin API", "path", r.URL.Path, "brokers", req.Brokers,
			"draining", controlplane.DrainingIDs(draining))
		ids := controlplane.DrainingIDs(draining)
		if ids == nil {
			ids = []int32{}
		}
		writeAdminJSON(w, adminapi.DrainState{Draining: ids})
	case errors.Is(err, controlplane.ErrBrokerNotRegistered), errors.Is(err, controlplane.ErrDrainImpossible):
		n.logger.Warn("admin: drain change refused", "path", r.URL.Path, "brokers", req.Brokers, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, controlplane.ErrConflict):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		n.logger.Warn("admin: drain change failed", "path", r.URL.Path, "brokers", req.Brokers, "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}

func writeAdminJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) //nolint:errcheck // the client went away
}
