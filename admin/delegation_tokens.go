package admin

// Delegation tokens (KIP-48, KIP-373): what CreateDelegationToken,
// RenewDelegationToken, ExpireDelegationToken and DescribeDelegationToken
// share. A token's HMAC is HMAC-SHA512(delegation_token_secret_key, token
// id), as Kafka's; it is its SCRAM password in base64 and is never stored.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

// tokenErrorTimestamp is Kafka's DelegationTokenManager.ErrorTimestamp.
const tokenErrorTimestamp = -1

// tokensEnabled reports whether delegation tokens are on: a secret key and
// a store.
func (h *Handlers) tokensEnabled() bool {
	return h.tokens != nil && h.cfg.DelegationTokenSecretKey != ""
}

// tokenHMAC is the HMAC of token id under the node's secret key.
func (h *Handlers) tokenHMAC(id string) []byte {
	return TokenHMAC(h.cfg.DelegationTokenSecretKey, id)
}

// TokenHMAC is Kafka's delegation token HMAC: HMAC-SHA512 of the token id
// keyed with delegation.token.secret.key.
func TokenHMAC(secret, id string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(id))
	return m.Sum(nil)
}

// TokenPassword is the SCRAM password of a token: its HMAC in base64, as
// Kafka's clients and kafka-delegation-tokens.sh print it.
func TokenPassword(hmac []byte) string { return base64.StdEncoding.EncodeToString(hmac) }

// tokenByHMAC finds the token whose HMAC is mac (Kafka's tokenForHmac),
// ok false when there is none.
func (h *Handlers) tokenByHMAC(ctx context.Context, mac []byte) (controlplane.StoredDelegationToken, bool, error) {
	all, err := h.tokens.List(ctx)
	if err != nil {
		return controlplane.StoredDelegationToken{}, false, err
	}
	for _, t := range all {
		if hmac.Equal(h.tokenHMAC(t.TokenID), mac) {
			return t, true, nil
		}
	}
	return controlplane.StoredDelegationToken{}, false, nil
}

// tokenSCRAM derives the SCRAM credentials of a token's HMAC, for both
// mechanisms, with random salts.
func tokenSCRAM(id string, mac []byte) ([]controlplane.SCRAMCredential, error) {
	var out []controlplane.SCRAMCredential
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		c, err := sasl.NewCredential(mech, id, TokenPassword(mac), 0)
		if err != nil {
			return nil, err
		}
		out = append(out, controlplane.SCRAMCredential{User: id, Mechanism: mech, Salt: c.Salt, Iterations: c.Iterations,
			StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	return out, nil
}

// mayRenew is Kafka's allowedToRenew: the owner or a renewer.
func mayRenew(t controlplane.DelegationToken, principal string) bool {
	return t.Owner == principal || slices.Contains(t.Renewers, principal)
}

// ownerOrRenewer is Kafka's TokenInformation.ownerOrRenewer: the owner,
// the requester or a renewer.
func ownerOrRenewer(t controlplane.DelegationToken, principal string) bool {
	return t.Owner == principal || t.Requester == principal || slices.Contains(t.Renewers, principal)
}

// sumMs is now+d in milliseconds, saturating as Kafka's sum does.
func sumMs(now, d int64) int64 {
	if now > (1<<63-1)-d {
		return 1<<63 - 1
	}
	return now + d
}

func nowMs() int64 { return time.Now().UnixMilli() }

// tokenRequestRefused reports Kafka's allowTokenRequests failing: a
// token-authenticated session, a PLAINTEXT listener, an anonymous SSL one.
func tokenRequestRefused(req *kafka.Request) bool { return !req.Conn.DelegationTokenRequestsAllowed() }

func splitPrincipal(p string) (typ, name string) {
	for i := 0; i < len(p); i++ {
		if p[i] == ':' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// newTokenID is a random (version 4) UUID string, as Kafka's token ids.
func newTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
