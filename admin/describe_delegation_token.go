package admin

// DescribeDelegationToken (key 41), versions 0-3.
//
//   - v0-v1 (KIP-48): the tokens of the owners named (null: every token;
//     an empty list: none) that the requester may see: its own (as owner,
//     requester or renewer), those it has Describe on (DELEGATION_TOKEN
//     resource, by id), and those whose owner it has DescribeTokens on
//     (USER resource, KIP-373). An owner filter matches a token's owner,
//     requester or renewers, as Kafka's. Expired tokens not yet removed
//     are left out. v2: flexible. v3: each token's requester.
//   - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a token-authenticated
//     session, a PLAINTEXT listener or an anonymous SSL one;
//     DELEGATION_TOKEN_AUTH_DISABLED without a secret key.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleDescribeDelegationToken(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	switch {
	case tokenRequestRefused(req):
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return kafka.Reply{Response: resp}, nil
	case !h.tokensEnabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return kafka.Reply{Response: resp}, nil
	case r.Owners != nil && len(r.Owners) == 0:
		return kafka.Reply{Response: resp}, nil
	}
	var owners []string
	for _, o := range r.Owners {
		owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
	}
	all, err := h.tokens.List(ctx)
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return kafka.Reply{Response: resp}, nil
	}
	me, now := req.Conn.Principal, time.Now()
	for _, t := range all {
		if t.Expired(now) {
			continue
		}
		if owners != nil && !slices.ContainsFunc(owners, func(o string) bool { return ownerOrRenewer(t.DelegationToken, o) }) {
			continue
		}
		if !ownerOrRenewer(t.DelegationToken, me) && !h.authz.Permits(req, acl.OpDescribe, acl.DelegationToken(t.TokenID)) &&
			!h.authz.Permits(req, acl.OpDescribeTokens, acl.User(t.Owner)) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
		d.TokenID, d.HMAC = t.TokenID, h.tokenHMAC(t.TokenID)
		for _, rn := range t.Renewers {
			rr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			rr.PrincipalType, rr.PrincipalName = splitPrincipal(rn)
			d.Renewers = append(d.Renewers, rr)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return kafka.Reply{Response: resp}, nil
}
