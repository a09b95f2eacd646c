package sdk

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RegisteredBroker is one registered broker as ListBrokers reports it: live,
// or fenced (down, but still registered, so that replicas may still be
// placed on it).
type RegisteredBroker struct {
	BrokerInfo
	// Fenced: the broker is registered but has no live session. It leads
	// nothing and is in no ISR; its address is the last one it advertised.
	Fenced bool
}

// ListBrokers returns every registered broker, fenced ones included, by
// node id, with Kafka's DescribeCluster v2 (IncludeFencedBrokers,
// KIP-1073). A broker that serves only older versions lists its live
// brokers alone.
func (a *Admin) ListBrokers(ctx context.Context) ([]RegisteredBroker, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, fmt.Errorf("sdk: describe cluster: %w", err)
	}
	if err := resultErr(resp.ErrorCode, resp.ErrorMessage, "sdk: describe cluster"); err != nil {
		return nil, err
	}
	out := make([]RegisteredBroker, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		rb := RegisteredBroker{BrokerInfo: BrokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port}, Fenced: b.IsFenced}
		if b.Rack != nil {
			rb.Rack = *b.Rack
		}
		out = append(out, rb)
	}
	slices.SortFunc(out, func(x, y RegisteredBroker) int { return cmp.Compare(x.NodeID, y.NodeID) })
	return out, nil
}

// UnregisterBroker removes broker id's registration for good, for a
// decommissioned broker (Kafka's UnregisterBroker, KIP-631): replicas can
// no longer be placed on it. Shale refuses a broker that is live
// (kerr.InvalidRequest: stop it first); an id that is not registered is
// kerr.BrokerIDNotRegistered. Partitions that still name the broker keep
// it: reassign them.
func (a *Admin) UnregisterBroker(ctx context.Context, id int32) error {
	if a.closed.Load() {
		return ErrClosed
	}
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return fmt.Errorf("sdk: unregister broker %d: %w", id, err)
	}
	return resultErr(resp.ErrorCode, resp.ErrorMessage, fmt.Sprintf("sdk: unregister broker %d", id))
}
