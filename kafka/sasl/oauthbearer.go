package sasl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shale-io/shale/kafka"
)

// OAuthBearer is the OAUTHBEARER mechanism name (RFC 7628, Kafka's
// KIP-255).
const OAuthBearer = "OAUTHBEARER"

// JWTValidator checks bearer tokens: a JWS signed by a key of its source
// (by the token's kid) with an allowed algorithm, whose claims hold its
// rules. Its methods are safe for concurrent use.
type JWTValidator struct {
	keys  *JWKSource
	rules ClaimRules
	now   func() time.Time
}

// NewJWTValidator returns a validator of tokens against keys and rules.
// now is the clock (nil is time.Now).
func NewJWTValidator(keys *JWKSource, rules ClaimRules, now func() time.Time) *JWTValidator {
	if now == nil {
		now = time.Now
	}
	return &JWTValidator{keys: keys, rules: rules, now: now}
}

// Validate checks token and returns its subject (the claim rules name) and
// its expiry. Every failure wraps ErrInvalidToken and never holds the token.
func (v *JWTValidator) Validate(ctx context.Context, token string) (sub string, exp time.Time, err error) {
	t, err := parseJWT(token)
	if err != nil {
		return "", time.Time{}, err
	}
	set := v.keys.keys(ctx, t.header.Kid)
	if set == nil {
		return "", time.Time{}, fmt.Errorf("%w: no JWKS loaded", ErrInvalidToken)
	}
	cands := set.candidates(t.header.Kid, t.header.Alg)
	if len(cands) == 0 {
		return "", time.Time{}, fmt.Errorf("%w: no key for kid %q and %s", ErrInvalidToken, truncate(t.header.Kid), t.header.Alg)
	}
	var verr error
	for _, k := range cands {
		if verr = t.verify(k); verr == nil {
			break
		}
	}
	if verr != nil {
		return "", time.Time{}, verr
	}
	return t.checkClaims(v.rules, v.now())
}

// OAuthBearerMechanism returns OAUTHBEARER checking tokens with v. The
// principal is User: and the token's subject; the session ends at the
// token's expiry (see kafka.SASLExpiringExchange).
func OAuthBearerMechanism(v *JWTValidator) kafka.SASLMechanism { return oauthMechanism{v: v} }

type oauthMechanism struct{ v *JWTValidator }

func (oauthMechanism) Name() string { return OAuthBearer }

func (m oauthMechanism) Start() kafka.SASLExchange { return &oauthExchange{v: m.v} }

// oauthExchange is one OAUTHBEARER authentication: the client's initial
// response, and, when the token does not validate, RFC 7628's error
// exchange (the server's JSON status, the client's %x01, then the failure).
type oauthExchange struct {
	v      *JWTValidator
	step   int
	failed error     // the validation failure the JSON status was sent for
	exp    time.Time // the token's expiry once authenticated
}

// invalidTokenStatus is the server's error message (RFC 7628 section
// 3.2.2), what Kafka sends.
var invalidTokenStatus = []byte(`{"status":"invalid_token"}`)

func (e *oauthExchange) Step(ctx context.Context, msg []byte) ([]byte, bool, string, error) {
	e.step++
	switch {
	case e.step == 1:
	case e.step == 2 && e.failed != nil:
		if !bytes.Equal(msg, []byte{0x01}) {
			return nil, false, "", fmt.Errorf("%w: OAUTHBEARER: %v; the client's answer to the error status is not %%x01", kafka.ErrSASLAuthFailed, e.failed)
		}
		return nil, false, "", fmt.Errorf("%w: OAUTHBEARER: %v", kafka.ErrSASLAuthFailed, e.failed)
	default:
		return nil, false, "", fmt.Errorf("%w: OAUTHBEARER: a message after the exchange ended", kafka.ErrSASLAuthFailed)
	}
	first, err := parseOAuthBearer(msg)
	if err != nil {
		return nil, false, "", fmt.Errorf("%w: OAUTHBEARER: %v", kafka.ErrSASLAuthFailed, err)
	}
	sub, exp, err := e.v.Validate(ctx, first.token)
	if err == nil && first.authzid != "" && first.authzid != sub {
		err = errors.New("the authorization id differs from the token's subject")
	}
	if err != nil {
		e.failed = err
		return invalidTokenStatus, false, "", nil
	}
	e.exp = exp
	return nil, true, sub, nil
}

// CredentialExpiry is the token's expiry (kafka.SASLExpiringExchange).
func (e *oauthExchange) CredentialExpiry() time.Time { return e.exp }

// oauthFirst is a client's initial response.
type oauthFirst struct {
	authzid    string
	token      string
	extensions map[string]string
}

// maxOAuthMessage bounds the initial response.
const maxOAuthMessage = maxTokenBytes + 4<<10

// parseOAuthBearer parses the client's initial response, RFC 7628 section
// 3.1 as Kafka reads it: "n," ["a=" saslname] "," %x01, then key=value
// pairs each ended by %x01 (one of them auth=Bearer <token>), then %x01.
// Channel binding (y, p=) is not supported: Kafka's clients never ask for
// it. The other keys are SASL extensions (KIP-342), kept, not interpreted.
func parseOAuthBearer(msg []byte) (oauthFirst, error) {
	var f oauthFirst
	if len(msg) > maxOAuthMessage {
		return f, fmt.Errorf("initial response longer than %d bytes", maxOAuthMessage)
	}
	s := string(msg)
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return f, errors.New("the GS2 header is not n, (no channel binding)")
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return f, errors.New("no end to the GS2 header")
	}
	if authz != "" {
		name, ok := strings.CutPrefix(authz, "a=")
		if !ok || name == "" {
			return f, errors.New("bad authzid in the GS2 header")
		}
		var err error
		if f.authzid, err = unescapeSASLName(name); err != nil {
			return f, err
		}
	}
	body, ok := strings.CutPrefix(rest, "\x01")
	if !ok {
		return f, errors.New("no %x01 after the GS2 header")
	}
	pairs, ok := strings.CutSuffix(body, "\x01\x01")
	if !ok {
		return f, errors.New("not ended by %x01%x01")
	}
	for _, kv := range strings.Split(pairs, "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validKey(k) || !validValue(v) {
			return f, errors.New("malformed key=value pair")
		}
		if k == "auth" {
			if f.token != "" {
				return f, errors.New("two auth pairs")
			}
			tok, err := bearerToken(v)
			if err != nil {
				return f, err
			}
			f.token = tok
			continue
		}
		if f.extensions == nil {
			f.extensions = map[string]string{}
		}
		if _, dup := f.extensions[k]; dup {
			return f, errors.New("an extension named twice")
		}
		f.extensions[k] = v
	}
	if f.token == "" {
		return f, errors.New("no auth pair")
	}
	return f, nil
}

// unescapeSASLName decodes RFC 5802's saslname: =2C is ",", =3D is "=",
// any other "=" is an error.
func unescapeSASLName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=' && strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
			i += 2
		case c == '=' && strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
			i += 2
		case c == '=' || c == 0 || c > 0x7f:
			return "", errors.New("bad authzid in the GS2 header")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// validKey: RFC 7628's key, 1*(ALPHA).
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// validValue: RFC 7628's value, *(VCHAR / SP / HTAB / CR / LF).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// bearerToken reads an auth value, "Bearer" (any case), spaces, and a
// token of RFC 6750's b64token characters.
func bearerToken(v string) (string, error) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", errors.New("the auth pair is not a Bearer token")
	}
	tok = strings.Trim(tok, " ")
	if tok == "" {
		return "", errors.New("an empty Bearer token")
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && !strings.ContainsRune("-._~+/=", rune(c)) {
			return "", errors.New("bad characters in the Bearer token")
		}
	}
	return tok, nil
}
