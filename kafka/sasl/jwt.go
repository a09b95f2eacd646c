package sasl

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	_ "crypto/sha256" // SHA-256 for RS256, PS256, ES256
	_ "crypto/sha512" // SHA-384 and SHA-512
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// ErrInvalidToken is the cause of every JWT that does not validate: a
// malformed token, an algorithm not allowed, no key, a bad signature, or
// claims that do not hold. Its wrapped messages name what failed, never the
// token.
var ErrInvalidToken = errors.New("sasl: invalid token")

// maxTokenBytes bounds a JWT: larger ones are refused before decoding.
const maxTokenBytes = 16 << 10

// jwtAlgs are the JWS algorithms a token may be signed with (RFC 7518):
// RSA PKCS#1 v1.5, RSA-PSS and ECDSA. "none" and the HMAC ones (HS256...)
// are absent on purpose: a public key must never serve as an HMAC secret.
var jwtAlgs = map[string]struct {
	hash crypto.Hash
	kty  string // the JWK key type the algorithm needs
	pss  bool
	crv  string // for ECDSA, the curve the key must be on
}{
	"RS256": {crypto.SHA256, "RSA", false, ""},
	"RS384": {crypto.SHA384, "RSA", false, ""},
	"RS512": {crypto.SHA512, "RSA", false, ""},
	"PS256": {crypto.SHA256, "RSA", true, ""},
	"PS384": {crypto.SHA384, "RSA", true, ""},
	"PS512": {crypto.SHA512, "RSA", true, ""},
	"ES256": {crypto.SHA256, "EC", false, "P-256"},
	"ES384": {crypto.SHA384, "EC", false, "P-384"},
	"ES512": {crypto.SHA512, "EC", false, "P-521"},
}

// jwtHeader is a JWS protected header's fields that matter here.
type jwtHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Crit []string `json:"crit"`
}

// parsedJWT is a token split and decoded, not yet verified.
type parsedJWT struct {
	header       jwtHeader
	claims       map[string]json.RawMessage
	signingInput []byte // base64url(header) "." base64url(payload)
	signature    []byte
}

// parseJWT splits a JWS compact serialization (RFC 7515 section 7.1) and
// decodes its header and claims. It checks the form only: the algorithm is
// one of jwtAlgs, no critical extension is asked for, and the claims are a
// JSON object.
func parseJWT(token string) (*parsedJWT, error) {
	if len(token) > maxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, maxTokenBytes)
	}
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, fmt.Errorf("%w: not a JWS compact serialization", ErrInvalidToken)
	}
	hb, err1 := b64(h)
	pb, err2 := b64(p)
	sig, err3 := b64(s)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("%w: bad base64url", ErrInvalidToken)
	}
	t := &parsedJWT{signingInput: []byte(token[:len(h)+1+len(p)]), signature: sig}
	if err := strictJSON(hb, &t.header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrInvalidToken, err)
	}
	if _, ok := jwtAlgs[t.header.Alg]; !ok {
		return nil, fmt.Errorf("%w: algorithm %q not allowed", ErrInvalidToken, truncate(t.header.Alg))
	}
	if t.header.Crit != nil {
		return nil, fmt.Errorf("%w: critical header extensions are not supported", ErrInvalidToken)
	}
	if err := strictJSON(pb, &t.claims); err != nil || t.claims == nil {
		return nil, fmt.Errorf("%w: claims are not a JSON object", ErrInvalidToken)
	}
	return t, nil
}

// b64 decodes base64url without padding, as JWS requires.
func b64(s string) ([]byte, error) { return base64.RawURLEncoding.Strict().DecodeString(s) }

// strictJSON decodes one JSON value and refuses trailing data.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}

// truncate bounds an attacker's string before it goes into an error.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// verify checks t's signature with key, which must be of the kind t's
// algorithm needs: an RSA key of at least 2048 bits for RS* and PS*, an
// ECDSA key on the algorithm's curve for ES*. A key of another kind is an
// error, so that a token cannot choose how a key is used.
func (t *parsedJWT) verify(key *JWK) error {
	a := jwtAlgs[t.header.Alg]
	if key.alg != "" && key.alg != t.header.Alg {
		return fmt.Errorf("%w: key %q is for %s, token is %s", ErrInvalidToken, truncate(key.Kid), key.alg, t.header.Alg)
	}
	h := a.hash.New()
	h.Write(t.signingInput)
	digest := h.Sum(nil)
	switch k := key.pub.(type) {
	case *rsa.PublicKey:
		if a.kty != "RSA" {
			return fmt.Errorf("%w: %s with an RSA key", ErrInvalidToken, t.header.Alg)
		}
		var err error
		if a.pss {
			err = rsa.VerifyPSS(k, a.hash, digest, t.signature, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			err = rsa.VerifyPKCS1v15(k, a.hash, digest, t.signature)
		}
		if err != nil {
			return fmt.Errorf("%w: bad signature", ErrInvalidToken)
		}
	case *ecdsa.PublicKey:
		if a.kty != "EC" || key.crv != a.crv {
			return fmt.Errorf("%w: %s with an EC key on %s", ErrInvalidToken, t.header.Alg, key.crv)
		}
		n := (k.Curve.Params().BitSize + 7) / 8
		if len(t.signature) != 2*n {
			return fmt.Errorf("%w: bad signature", ErrInvalidToken)
		}
		r, s := new(big.Int).SetBytes(t.signature[:n]), new(big.Int).SetBytes(t.signature[n:])
		if !ecdsa.Verify(k, digest, r, s) {
			return fmt.Errorf("%w: bad signature", ErrInvalidToken)
		}
	default:
		return fmt.Errorf("%w: unusable key", ErrInvalidToken)
	}
	return nil
}

// ClaimRules are what a token's claims must hold, Kafka's broker-side
// sasl.oauthbearer.* settings.
type ClaimRules struct {
	// Issuer is sasl.oauthbearer.expected.issuer: when set, the iss claim
	// must equal it.
	Issuer string
	// Audience is sasl.oauthbearer.expected.audience: when set, the aud
	// claim (a string or a list) must hold one of them.
	Audience []string
	// SubClaim is sasl.oauthbearer.sub.claim.name, the claim that names the
	// principal; empty is "sub".
	SubClaim string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds: how far exp, nbf
	// and iat may be off; zero is none.
	ClockSkew time.Duration
}

// checkClaims applies rules to t's claims at now and returns the subject
// and the expiry. Like Kafka's validator it requires exp and iat; nbf is
// checked when present.
func (t *parsedJWT) checkClaims(rules ClaimRules, now time.Time) (sub string, exp time.Time, err error) {
	exp, ok, err := t.numericDate("exp")
	if err != nil || !ok {
		return "", time.Time{}, fmt.Errorf("%w: no valid exp claim", ErrInvalidToken)
	}
	if !now.Before(exp.Add(rules.ClockSkew)) {
		return "", time.Time{}, fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	iat, ok, err := t.numericDate("iat")
	if err != nil || !ok {
		return "", time.Time{}, fmt.Errorf("%w: no valid iat claim", ErrInvalidToken)
	}
	if iat.After(now.Add(rules.ClockSkew)) {
		return "", time.Time{}, fmt.Errorf("%w: issued in the future", ErrInvalidToken)
	}
	if nbf, ok, err := t.numericDate("nbf"); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: bad nbf claim", ErrInvalidToken)
	} else if ok && nbf.After(now.Add(rules.ClockSkew)) {
		return "", time.Time{}, fmt.Errorf("%w: not valid yet", ErrInvalidToken)
	}
	if rules.Issuer != "" {
		if iss, _ := t.stringClaim("iss"); iss != rules.Issuer {
			return "", time.Time{}, fmt.Errorf("%w: issuer does not match", ErrInvalidToken)
		}
	}
	if len(rules.Audience) > 0 && !t.audienceHolds(rules.Audience) {
		return "", time.Time{}, fmt.Errorf("%w: audience does not match", ErrInvalidToken)
	}
	name := rules.SubClaim
	if name == "" {
		name = "sub"
	}
	sub, ok = t.stringClaim(name)
	if !ok || strings.TrimSpace(sub) == "" {
		return "", time.Time{}, fmt.Errorf("%w: no %s claim", ErrInvalidToken, truncate(name))
	}
	return sub, exp, nil
}

// numericDate reads a NumericDate claim (seconds since the epoch, maybe
// fractional). ok is false when the claim is absent.
func (t *parsedJWT) numericDate(name string) (time.Time, bool, error) {
	raw, ok := t.claims[name]
	if !ok {
		return time.Time{}, false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) || f < 0 || f > 1<<40 {
		return time.Time{}, false, fmt.Errorf("%s is not a NumericDate", name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

func (t *parsedJWT) stringClaim(name string) (string, bool) {
	var s string
	raw, ok := t.claims[name]
	if !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// audienceHolds reports whether the aud claim, a string or a list of them,
// names one of want.
func (t *parsedJWT) audienceHolds(want []string) bool {
	raw, ok := t.claims["aud"]
	if !ok {
		return false
	}
	var auds []string
	if s, ok := t.stringClaim("aud"); ok {
		auds = []string{s}
	} else if json.Unmarshal(raw, &auds) != nil {
		return false
	}
	for _, a := range auds {
		for _, w := range want {
			if a == w {
				return true
			}
		}
	}
	return false
}
