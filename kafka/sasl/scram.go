package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xdg-go/scram"

	"github.com/shale-io/shale/kafka"
)

// SCRAM mechanism names.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ErrUnknownMechanism: a SCRAM mechanism other than SCRAM-SHA-256 and
// SCRAM-SHA-512.
var ErrUnknownMechanism = errors.New("sasl: unknown SCRAM mechanism")

// ErrUnknownUser is what a CredentialLookup returns for a user without
// credentials of the mechanism.
var ErrUnknownUser = errors.New("sasl: unknown user")

// Credential is what a server stores for one user and one SCRAM mechanism
// (RFC 5802 section 3): never the password.
type Credential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// MinIterations is Kafka's lower bound of a SCRAM credential's iterations
// (and its default 4096 is the one NewCredential uses when given 0).
const (
	MinIterations     = 4096
	DefaultIterations = 4096
	MaxIterations     = 16384
)

// NewCredential salts and derives the credential of password for mechanism
// with a random 32-byte salt (iterations 0 is DefaultIterations).
func NewCredential(mechanism, user, password string, iterations int) (Credential, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, err
	}
	return DeriveCredential(mechanism, user, password, salt, iterations)
}

// DeriveCredential is NewCredential with a given salt (Kafka's
// AlterUserScramCredentials sends a salted password and its salt).
func DeriveCredential(mechanism, user, password string, salt []byte, iterations int) (Credential, error) {
	if iterations == 0 {
		iterations = DefaultIterations
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("sasl: iterations %d: want %d..%d", iterations, MinIterations, MaxIterations)
	}
	h, err := hashOf(mechanism)
	if err != nil {
		return Credential{}, err
	}
	cl, err := h.NewClient(user, password, "")
	if err != nil {
		return Credential{}, fmt.Errorf("sasl: %w", err)
	}
	sc := cl.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	return Credential{Salt: salt, Iterations: iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

func hashOf(mechanism string) (scram.HashGeneratorFcn, error) {
	switch mechanism {
	case ScramSHA256:
		return scram.SHA256, nil
	case ScramSHA512:
		return scram.SHA512, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownMechanism, mechanism)
}

// CredentialLookup returns the credential of user for one mechanism, or
// ErrUnknownUser. It must be safe for concurrent use.
type CredentialLookup func(ctx context.Context, user string) (Credential, error)

// TokenCredential is what a server holds for one delegation token and one
// SCRAM mechanism (KIP-48): the SCRAM credential whose password is the
// token's HMAC in base64, the user name of the token's owner (the
// principal User:<Owner> a login with it gets) and when it expires.
type TokenCredential struct {
	Credential
	Owner  string
	Expiry time.Time
}

// TokenLookup returns the credential of the delegation token tokenID for
// one mechanism, or ErrUnknownUser when there is no such live token (or
// tokens are disabled). It must be safe for concurrent use.
type TokenLookup func(ctx context.Context, tokenID string) (TokenCredential, error)

// SCRAM returns the mechanism named mechanism (ScramSHA256 or ScramSHA512)
// that checks clients against lookup.
func SCRAM(mechanism string, lookup CredentialLookup) (kafka.SASLMechanism, error) {
	return SCRAMWithTokens(mechanism, lookup, nil)
}

// SCRAMWithTokens is SCRAM that also logs clients in with delegation
// tokens (KIP-48): a client-first message with the extension
// tokenauth=true names a token id as its user, and is checked against
// tokens (nil refuses such logins). The session is then the token
// owner's, token-authenticated (kafka.SASLTokenExchange), and ends no
// later than the token expires (kafka.SASLExpiringExchange).
func SCRAMWithTokens(mechanism string, lookup CredentialLookup, tokens TokenLookup) (kafka.SASLMechanism, error) {
	h, err := hashOf(mechanism)
	if err != nil {
		return nil, err
	}
	return &scramMechanism{name: mechanism, hash: h, lookup: lookup, tokens: tokens}, nil
}

type scramMechanism struct {
	name   string
	hash   scram.HashGeneratorFcn
	lookup CredentialLookup
	tokens TokenLookup // nil: no token logins
}

func (m *scramMechanism) Name() string { return m.name }

func (m *scramMechanism) Start() kafka.SASLExchange { return &scramExchange{m: m} }

// scramExchange is one SCRAM conversation: client-first, server-first,
// client-final, server-final. The server conversation is made at the first
// step, when the lookup can take the request's context.
type scramExchange struct {
	m    *scramMechanism
	conv *scram.ServerConversation

	token       bool      // the client-first message asked for tokenauth
	tokenOwner  string    // set by the token lookup
	tokenExpiry time.Time // set by the token lookup
}

// TokenAuthenticated reports whether the exchange logged in with a
// delegation token (kafka.SASLTokenExchange).
func (e *scramExchange) TokenAuthenticated() bool { return e.token }

// CredentialExpiry is the token's expiry after a token login, else zero
// (kafka.SASLExpiringExchange).
func (e *scramExchange) CredentialExpiry() time.Time { return e.tokenExpiry }

// wantsToken reports whether a SCRAM client-first message carries the
// extension tokenauth=true (KIP-48): an attribute after the nonce, as
// Kafka's ScramExtensions reads them (the value compared ignoring case).
func wantsToken(clientFirst []byte) bool {
	fields := strings.Split(string(clientFirst), ",")
	if len(fields) <= 4 {
		return false
	}
	for _, f := range fields[4:] {
		if k, v, ok := strings.Cut(f, "="); ok && k == "tokenauth" && strings.EqualFold(v, "true") {
			return true
		}
	}
	return false
}

func (e *scramExchange) Step(ctx context.Context, msg []byte) (out []byte, done bool, user string, err error) {
	// xdg-go/scram v1.1.2 indexes an empty GS2 flag (client-first ",,,")
	// and panics; FuzzSCRAMMessages found it. A message that crashes the
	// parser is a malformed one.
	defer func() {
		if v := recover(); v != nil {
			out, done, user, err = nil, false, "", fmt.Errorf("%w: %s: malformed message", kafka.ErrSASLAuthFailed, e.m.name)
		}
	}()
	return e.step(ctx, msg)
}

func (e *scramExchange) step(ctx context.Context, msg []byte) ([]byte, bool, string, error) {
	if e.conv == nil {
		e.token = wantsToken(msg)
		if e.token && e.m.tokens == nil {
			return nil, false, "", fmt.Errorf("%w: %s: delegation tokens are disabled", kafka.ErrSASLAuthFailed, e.m.name)
		}
		srv, err := e.m.hash.NewServer(func(user string) (scram.StoredCredentials, error) {
			var c Credential
			var err error
			if e.token {
				var tc TokenCredential
				tc, err = e.m.tokens(ctx, user)
				c, e.tokenOwner, e.tokenExpiry = tc.Credential, tc.Owner, tc.Expiry
			} else {
				c, err = e.m.lookup(ctx, user)
			}
			if err != nil {
				return scram.StoredCredentials{}, err
			}
			return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
				StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
		})
		if err != nil {
			return nil, false, "", err
		}
		e.conv = srv.NewConversation()
	}
	if e.conv.Done() {
		return nil, false, "", fmt.Errorf("%w: message after the exchange ended", kafka.ErrSASLAuthFailed)
	}
	out, err := e.conv.Step(string(msg))
	if err != nil {
		// xdg-go/scram's errors name the step, never the secret.
		return nil, false, "", fmt.Errorf("%w: %s: %v", kafka.ErrSASLAuthFailed, e.m.name, err)
	}
	if e.conv.Done() {
		if !e.conv.Valid() {
			return nil, false, "", fmt.Errorf("%w: %s: invalid proof", kafka.ErrSASLAuthFailed, e.m.name)
		}
		if e.token {
			return []byte(out), true, e.tokenOwner, nil
		}
		return []byte(out), true, e.conv.Username(), nil
	}
	return []byte(out), false, "", nil
}

// CredentialFromSaltedPassword derives the stored credential from a salted
// password (RFC 5802: ClientKey = HMAC(salted, "Client Key"), StoredKey =
// H(ClientKey), ServerKey = HMAC(salted, "Server Key")), the form Kafka's
// AlterUserScramCredentials sends so that the password never reaches the
// broker.
func CredentialFromSaltedPassword(mechanism string, salt, salted []byte, iterations int) (Credential, error) {
	h, err := hashOf(mechanism)
	if err != nil {
		return Credential{}, err
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("sasl: iterations %d: want %d..%d", iterations, MinIterations, MaxIterations)
	}
	if len(salt) == 0 || len(salted) == 0 {
		return Credential{}, fmt.Errorf("sasl: empty salt or salted password")
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	sh := h()
	sh.Write(clientKey)
	return Credential{Salt: salt, Iterations: iterations, StoredKey: sh.Sum(nil), ServerKey: mac(salted, "Server Key")}, nil
}
