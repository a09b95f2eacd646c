package broker

import (
	"context"
	"errors"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka/sasl"
)

// tokenLookup is the SCRAM mechanism's delegation token lookup for
// mechanism: the token's credential from the control plane, refused
// (sasl.ErrUnknownUser) when tokens are off, the token is unknown, or it
// expired (whether or not a sweep removed it yet).
func (n *Node) tokenLookup(mechanism string) sasl.TokenLookup {
	if n.cfg.DelegationTokenSecretKey == "" {
		return nil
	}
	return func(ctx context.Context, id string) (sasl.TokenCredential, error) {
		t, _, err := n.tokens.Get(ctx, id)
		if errors.Is(err, controlplane.ErrNoDelegationToken) {
			return sasl.TokenCredential{}, sasl.ErrUnknownUser
		}
		if err != nil {
			return sasl.TokenCredential{}, err
		}
		c, ok := t.Credential(mechanism)
		if !ok || t.Expired(time.Now()) {
			return sasl.TokenCredential{}, sasl.ErrUnknownUser
		}
		_, owner := splitPrincipal(t.Owner)
		return sasl.TokenCredential{Owner: owner, Expiry: time.UnixMilli(t.ExpiryMs),
			Credential: sasl.Credential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}}, nil
	}
}

func splitPrincipal(p string) (typ, name string) {
	for i := 0; i < len(p); i++ {
		if p[i] == ':' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// tokenSweepLoop removes expired delegation tokens from the control plane
// every delegation_token_expiry_check_interval (Kafka's
// sweepExpiredDelegationTokens), until ctx is done. Every node runs it; the
// removals are compare-and-set, so two nodes never remove a renewed token.
func (n *Node) tokenSweepLoop(ctx context.Context) {
	if n.cfg.DelegationTokenSecretKey == "" {
		return
	}
	every(ctx, n.cfg.DelegationTokenExpiryCheckInterval, func() {
		removed, err := n.tokens.RemoveExpired(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			n.logger.Warn("delegation tokens: sweep", "err", err)
		}
		for _, id := range removed {
			n.logger.Info("delegation token expired and removed", "token_id", id)
		}
	})
}
