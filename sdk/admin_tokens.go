package sdk

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// DelegationToken is a delegation token (KIP-48) as the cluster describes
// it. Owner, Requester and Renewers are principals ("User:alice"); HMAC is
// the token's password in base64, as a token login (SCRAM with
// tokenauth=true, the token id as user name) takes it.
type DelegationToken struct {
	TokenID   string    `json:"token_id"`
	HMAC      string    `json:"hmac"`
	Owner     string    `json:"owner"`
	Requester string    `json:"requester"`
	Renewers  []string  `json:"renewers"`
	Issued    time.Time `json:"issued"`
	Expires   time.Time `json:"expires"`
	MaxExpiry time.Time `json:"max_expiry"`
}

func principal(p string) kadm.Principal {
	if typ, name, ok := strings.Cut(p, ":"); ok {
		return kadm.Principal{Type: typ, Name: name}
	}
	return kadm.Principal{Type: "User", Name: p}
}

func tokenOf(t kadm.DelegationToken) DelegationToken {
	d := DelegationToken{TokenID: t.TokenID, HMAC: base64.StdEncoding.EncodeToString(t.HMAC),
		Owner: t.Owner.Type + ":" + t.Owner.Name, Issued: t.IssueTimestamp, Expires: t.ExpiryTimestamp, MaxExpiry: t.MaxTimestamp}
	if t.TokenRequesterPrincipal.Name != "" {
		d.Requester = t.TokenRequesterPrincipal.Type + ":" + t.TokenRequesterPrincipal.Name
	}
	for _, r := range t.Renewers {
		d.Renewers = append(d.Renewers, r.Type+":"+r.Name)
	}
	return d
}

// CreateDelegationToken creates a token (CreateDelegationToken) owned by
// owner ("" is the caller), renewable by renewers, living at most
// maxLifetime (0 is the cluster's delegation_token_max_lifetime). The
// caller must have logged in with a password or a certificate, not a token.
func (a *Admin) CreateDelegationToken(ctx context.Context, owner string, renewers []string, maxLifetime time.Duration) (DelegationToken, error) {
	req := kadm.CreateDelegationToken{MaxLifetime: maxLifetime}
	if owner != "" {
		p := principal(owner)
		req.Owner = &p
	}
	for _, r := range renewers {
		req.Renewers = append(req.Renewers, principal(r))
	}
	t, err := a.adm.CreateDelegationToken(ctx, req)
	if err != nil {
		return DelegationToken{}, err
	}
	return tokenOf(t), nil
}

// RenewDelegationToken renews the token of hmac (base64) for period (0 is
// the cluster's delegation_token_expiry_time) and returns its new expiry.
func (a *Admin) RenewDelegationToken(ctx context.Context, hmac string, period time.Duration) (time.Time, error) {
	mac, err := base64.StdEncoding.DecodeString(hmac)
	if err != nil {
		return time.Time{}, err
	}
	return a.adm.RenewDelegationToken(ctx, mac, period)
}

// ExpireDelegationToken sets the token of hmac (base64) to expire after
// period; a negative period removes it at once.
func (a *Admin) ExpireDelegationToken(ctx context.Context, hmac string, period time.Duration) (time.Time, error) {
	mac, err := base64.StdEncoding.DecodeString(hmac)
	if err != nil {
		return time.Time{}, err
	}
	return a.adm.ExpireDelegationToken(ctx, mac, period)
}

// DescribeDelegationTokens lists the tokens of owners (none: every token
// the caller may see).
func (a *Admin) DescribeDelegationTokens(ctx context.Context, owners ...string) ([]DelegationToken, error) {
	var ps []kadm.Principal
	for _, o := range owners {
		ps = append(ps, principal(o))
	}
	ts, err := a.adm.DescribeDelegationTokens(ctx, ps...)
	if err != nil {
		return nil, err
	}
	var out []DelegationToken
	for _, t := range ts {
		out = append(out, tokenOf(t))
	}
	return out, nil
}
