package admin

// ExpireDelegationToken (key 40), versions 0-2.
//
//   - v0-v1 (KIP-48): the owner or a renewer of the token of the HMAC (else
//     DELEGATION_TOKEN_OWNER_MISMATCH) sets its expiry to now plus the
//     request's period, capped at its max timestamp; a negative period
//     removes the token at once. An unknown HMAC is
//     DELEGATION_TOKEN_NOT_FOUND, an already expired token (period >= 0)
//     DELEGATION_TOKEN_EXPIRED. v2: flexible.
//   - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a token-authenticated
//     session, a PLAINTEXT listener or an anonymous SSL one;
//     DELEGATION_TOKEN_AUTH_DISABLED without a secret key. Errors carry
//     expiry -1.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleExpireDelegationToken(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ExpireDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = h.changeTokenExpiry(ctx, req, r.HMAC, func(t controlplane.DelegationToken, now int64) (int64, int16) {
		switch {
		case !mayRenew(t, req.Conn.Principal):
			return 0, kerr.DelegationTokenOwnerMismatch.Code
		case r.ExpiryPeriodMillis < 0:
			return -1, 0 // remove now
		case t.MaxMs < now || t.ExpiryMs < now:
			return 0, kerr.DelegationTokenExpired.Code
		}
		return min(t.MaxMs, sumMs(now, r.ExpiryPeriodMillis)), 0
	})
	return kafka.Reply{Response: resp}, nil
}
