package admin

// RenewDelegationToken (key 39), versions 0-2.
//
//   - v0-v1 (KIP-48): the token of the HMAC is renewed by its owner or a
//     renewer (else DELEGATION_TOKEN_OWNER_MISMATCH): its expiry becomes
//     now plus the least of the request's period (when positive) and
//     delegation_token_expiry_time, capped at its max timestamp. An unknown
//     HMAC is DELEGATION_TOKEN_NOT_FOUND, an expired token
//     DELEGATION_TOKEN_EXPIRED. v2: flexible.
//   - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a token-authenticated
//     session, a PLAINTEXT listener or an anonymous SSL one;
//     DELEGATION_TOKEN_AUTH_DISABLED without a secret key. Errors carry
//     expiry -1.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleRenewDelegationToken(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.RenewDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = h.changeTokenExpiry(ctx, req, r.HMAC, func(t controlplane.DelegationToken, now int64) (int64, int16) {
		if t.MaxMs < now || t.ExpiryMs < now {
			return 0, kerr.DelegationTokenExpired.Code
		}
		if !mayRenew(t, req.Conn.Principal) {
			return 0, kerr.DelegationTokenOwnerMismatch.Code
		}
		life := h.cfg.DelegationTokenExpiryTime.Milliseconds()
		if r.RenewTimeMillis > 0 {
			life = min(life, r.RenewTimeMillis)
		}
		return min(t.MaxMs, sumMs(now, life)), 0
	})
	return kafka.Reply{Response: resp}, nil
}

// changeTokenExpiry is Renew's and Expire's shared path: it finds the token
// of mac, asks decide for its new expiry (or an error code; an expiry below
// zero removes the token), and writes it compare-and-set, again from the
// read when another node changed the token meanwhile. It returns the error
// code and the expiry to answer (-1 with an error).
func (h *Handlers) changeTokenExpiry(ctx context.Context, req *kafka.Request, mac []byte,
	decide func(t controlplane.DelegationToken, now int64) (int64, int16)) (int16, int64) {
	switch {
	case tokenRequestRefused(req):
		return kerr.DelegationTokenRequestNotAllowed.Code, tokenErrorTimestamp
	case !h.tokensEnabled():
		return kerr.DelegationTokenAuthDisabled.Code, tokenErrorTimestamp
	}
	for range 5 {
		t, ok, err := h.tokenByHMAC(ctx, mac)
		if err != nil {
			return kerr.UnknownServerError.Code, tokenErrorTimestamp
		}
		if !ok {
			return kerr.DelegationTokenNotFound.Code, tokenErrorTimestamp
		}
		now := nowMs()
		expiry, code := decide(t.DelegationToken, now)
		if code != 0 {
			return code, tokenErrorTimestamp
		}
		if expiry < 0 {
			err = h.tokens.Remove(ctx, t.TokenID, t.Revision)
			expiry = now
		} else {
			nt := t.DelegationToken
			nt.ExpiryMs = max(expiry, nt.IssueMs)
			err = h.tokens.Update(ctx, nt, t.Revision)
		}
		if errors.Is(err, controlplane.ErrDelegationTokenChanged) {
			continue
		}
		if err != nil {
			h.logger.Warn("admin: change delegation token expiry", "err", err)
			return kerr.UnknownServerError.Code, tokenErrorTimestamp
		}
		return 0, expiry
	}
	return kerr.UnknownServerError.Code, tokenErrorTimestamp
}
