package admin

// CreateDelegationToken (key 38), versions 0-3.
//
//   - v0-v1 (KIP-48): a token owned by the requester, with renewers (User
//     principals only, else INVALID_PRINCIPAL_TYPE) and a max lifetime: the
//     least of the request's (when positive) and
//     delegation_token_max_lifetime; it expires after
//     delegation_token_expiry_time (or at its max, if sooner). The answer
//     carries the token id and its HMAC (HMAC-SHA512 of the id keyed with
//     delegation_token_secret_key). v2: flexible.
//   - v3 (KIP-373): an owner other than the requester, which needs
//     CreateTokens on the owner's User resource
//     (DELEGATION_TOKEN_AUTHORIZATION_FAILED); the answer names the
//     requester.
//   - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a token-authenticated
//     session, a PLAINTEXT listener or an anonymous SSL one;
//     DELEGATION_TOKEN_AUTH_DISABLED without a secret key.
//
// Tokens live in the control plane (controlplane.DelegationTokens), so
// every node accepts them and they survive restarts.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleCreateDelegationToken(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.CreateDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	requester := req.Conn.Principal
	owner := requester
	if r.OwnerPrincipalName != nil && *r.OwnerPrincipalName != "" {
		typ := "User"
		if r.OwnerPrincipalType != nil {
			typ = *r.OwnerPrincipalType
		}
		owner = typ + ":" + *r.OwnerPrincipalName
	}
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(requester)
	fail := func(code int16) (kafka.Reply, error) {
		resp.ErrorCode = code
		return kafka.Reply{Response: resp}, nil
	}
	switch {
	case tokenRequestRefused(req):
		return fail(kerr.DelegationTokenRequestNotAllowed.Code)
	case owner != requester && !h.authz.Authorize(req, acl.OpCreateTokens, acl.User(owner)):
		return fail(kerr.DelegationTokenAuthorizationFailed.Code)
	}
	var renewers []string
	for _, rn := range r.Renewers {
		if rn.PrincipalType != "User" {
			return fail(kerr.InvalidPrincipalType.Code)
		}
		renewers = append(renewers, rn.PrincipalType+":"+rn.PrincipalName)
	}
	if !h.tokensEnabled() {
		return fail(kerr.DelegationTokenAuthDisabled.Code)
	}
	now := nowMs()
	maxLife := h.cfg.DelegationTokenMaxLifetime.Milliseconds()
	if r.MaxLifetimeMillis > 0 {
		maxLife = min(maxLife, r.MaxLifetimeMillis)
	}
	maxTs := sumMs(now, maxLife)
	expiry := min(maxTs, sumMs(now, h.cfg.DelegationTokenExpiryTime.Milliseconds()))
	id := newTokenID()
	mac := h.tokenHMAC(id)
	creds, err := tokenSCRAM(id, mac)
	if err != nil {
		return fail(kerr.UnknownServerError.Code)
	}
	t := controlplane.DelegationToken{TokenID: id, Owner: owner, Requester: requester, Renewers: renewers,
		IssueMs: now, ExpiryMs: expiry, MaxMs: maxTs, SCRAM: creds}
	if err := h.tokens.Create(ctx, t); err != nil {
		h.logger.Warn("admin: create delegation token", "err", err)
		return fail(kerr.UnknownServerError.Code)
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = now, expiry, maxTs
	resp.TokenID, resp.HMAC = id, mac
	return kafka.Reply{Response: resp}, nil
}
