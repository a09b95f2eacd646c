package adminapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// The controller's replica balancer and the draining (decommissioned)
// brokers: GET BalancePath answers the plan a balancer pass would run now,
// computed by the node asked from its view of the cluster (any node can
// answer; byte estimates come from the replicas it holds). POST
// DecommissionPath and RecommissionPath with a DrainRequest change the
// draining set in the control plane and answer the DrainState; a drain
// that cannot finish (too few brokers would be left for a partition's
// replicas), an unknown broker or a concurrent conflicting change is
// refused with 400 or 409 and a line saying why, and nothing changes.

// Admin HTTP paths of the balancer.
const (
	BalancePath      = "/v1/cluster/balance"
	DecommissionPath = "/v1/brokers/decommission"
	RecommissionPath = "/v1/brokers/recommission"
)

// BalancePlan is the plan of one balancer pass.
type BalancePlan struct {
	// Enabled is the node's balancer_enable: whether the controller runs
	// such passes by itself.
	Enabled bool `json:"enabled"`
	// MaxMoves and Skew are the bounds the plan was made with.
	MaxMoves int `json:"max_moves"`
	Skew     int `json:"skew"`
	// Draining lists the brokers being decommissioned.
	Draining []int32 `json:"draining"`
	// Brokers is each live or draining broker's load before the moves.
	Brokers []BrokerLoad `json:"brokers"`
	// Moves are in the order they would run.
	Moves []BalanceMove `json:"moves"`
	// InFlight counts the reassignments in progress, Pending the moves
	// left for later passes by MaxMoves.
	InFlight int `json:"in_flight"`
	Pending  int `json:"pending"`
	// Blocked says why some draining replicas cannot move.
	Blocked []string `json:"blocked"`
	// ReplicaSkew is the most loaded host's replicas less the least
	// loaded one's.
	ReplicaSkew int `json:"replica_skew"`
	// Balanced: nothing to do and nothing in flight.
	Balanced bool `json:"balanced"`
}

// BrokerLoad is one broker's share: partitions with a replica on it
// (reassignments in progress counted as done), led by it, and preferring
// it.
type BrokerLoad struct {
	Broker    int32  `json:"broker"`
	Rack      string `json:"rack,omitempty"`
	Replicas  int    `json:"replicas"`
	Leaders   int    `json:"leaders"`
	Preferred int    `json:"preferred"`
	// Host: may be given replicas. Draining: being decommissioned.
	Host     bool `json:"host"`
	Draining bool `json:"draining"`
}

// BalanceMove is one planned move. Kind is "leader" (leadership off a
// draining broker), "drain", "skew" or "preferred" (a reorder).
type BalanceMove struct {
	Kind      string `json:"kind"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int32  `json:"from"`
	To        int32  `json:"to"`
	// Replicas are the partition's replicas now; Target the list the
	// reassignment asks for (empty for a leader move).
	Replicas []int32 `json:"replicas"`
	Target   []int32 `json:"target"`
	// Bytes estimates what the move copies: -1 unknown, 0 for leader
	// moves and reorders.
	Bytes int64 `json:"bytes"`
}

// DrainRequest names brokers to decommission or recommission.
type DrainRequest struct {
	Brokers []int32 `json:"brokers"`
}

// DrainState is the draining set after a change.
type DrainState struct {
	Draining []int32 `json:"draining"`
}

func (p BalancePlan) validate() error {
	if p.Brokers == nil || p.Moves == nil || p.Draining == nil {
		return errors.New("no brokers, moves or draining list")
	}
	return nil
}

func (d DrainState) validate() error {
	if d.Draining == nil {
		return errors.New("no draining list")
	}
	return nil
}

// Balance GETs BalancePath from node; maxMoves > 0 plans with that bound
// instead of the node's balancer_max_moves. Errors are as TierStatus's.
func (c Client) Balance(ctx context.Context, node string, maxMoves int) (BalancePlan, error) {
	u := URL(node, BalancePath, "")
	if maxMoves > 0 {
		u += "?" + url.Values{"max_moves": {strconv.Itoa(maxMoves)}}.Encode()
	}
	return get[BalancePlan](ctx, c, u)
}

// Decommission POSTs ids to DecommissionPath on node: they start
// draining. A refusal is an ErrHTTPStatus error carrying the reason.
func (c Client) Decommission(ctx context.Context, node string, ids []int32) (DrainState, error) {
	return send[DrainState](ctx, c, http.MethodPost, URL(node, DecommissionPath, ""), DrainRequest{Brokers: ids})
}

// Recommission POSTs ids to RecommissionPath on node: they stop draining.
func (c Client) Recommission(ctx context.Context, node string, ids []int32) (DrainState, error) {
	return send[DrainState](ctx, c, http.MethodPost, URL(node, RecommissionPath, ""), DrainRequest{Brokers: ids})
}
