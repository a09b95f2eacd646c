package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASLMechanism is one SASL mechanism a listener offers (PLAIN,
// SCRAM-SHA-256, ...); package kafka/sasl has Shale's. It must be safe for
// concurrent use: every connection starts its own exchange.
type SASLMechanism interface {
	// Name is the mechanism's SASL name, as SaslHandshake lists it.
	Name() string
	// Start begins one authentication exchange.
	Start() SASLExchange
}

// SASLExchange is one client's authentication with one mechanism. Step is
// called with each SaslAuthenticate request's bytes, in order, from one
// goroutine.
type SASLExchange interface {
	// Step takes the client's next message and returns the server's
	// answer. done reports that the client has authenticated as user. An
	// error is a failed authentication (bad credentials or a malformed
	// message): the client is answered SASL_AUTHENTICATION_FAILED and the
	// connection closed. Errors must not carry secrets: they are logged.
	Step(ctx context.Context, msg []byte) (out []byte, done bool, user string, err error)
}

// SASLExpiringExchange is a SASLExchange whose credential expires (an
// OAUTHBEARER token). After Step reported done, CredentialExpiry is when
// the credential stops being valid; the session then ends no later
// (KIP-368), when re-authentication is on (Listener.MaxReauth).
type SASLExpiringExchange interface {
	SASLExchange
	CredentialExpiry() time.Time
}

// SASLTokenExchange is a SASLExchange that may authenticate a client with
// a delegation token (KIP-48): after Step reported done,
// TokenAuthenticated says whether it did, and the user it reported is the
// token's owner. A token-authenticated session may not create, renew,
// expire or describe tokens (ConnInfo.DelegationTokenRequestsAllowed).
type SASLTokenExchange interface {
	SASLExchange
	TokenAuthenticated() bool
}

// AuthObserver is told the outcome of every SASL authentication and
// re-authentication, and of every connection closed because its session
// expired (Kafka's socket-server-metrics: failed-authentication-total,
// successful-reauthentication-total, expired-connections-killed-count).
// mechanism is the one SaslHandshake chose, or "" when the client asked for
// one the listener does not offer. It must be safe for concurrent use and
// quick: it runs on the connections' goroutines.
type AuthObserver interface {
	ObserveAuthentication(listener, mechanism string, reauth bool, err error)
	ObserveExpiredSession(listener string)
}

// ErrSASLAuthFailed is the error a SASLExchange returns for credentials
// that do not verify.
var ErrSASLAuthFailed = errors.New("SASL authentication failed")

// ErrUnauthenticated: a request other than ApiVersions and the SASL APIs
// came on a SASL listener's connection before it authenticated; the
// connection is closed.
var ErrUnauthenticated = errors.New("kafka: request before SASL authentication")

// ErrSessionExpired: a request other than SaslHandshake came on a
// connection whose SASL session lifetime (KIP-368) has passed without a
// re-authentication; the connection is closed, as Kafka does.
var ErrSessionExpired = errors.New("kafka: SASL session expired")

// saslState is a SASL listener's connection's progress. Only the
// dispatcher goroutine uses it. A nil *saslState is a listener without
// SASL: everything is allowed and nothing closes.
//
// The states: new (only ApiVersions, SaslHandshake, SaslAuthenticate),
// exchanging (exchange set), authenticated, and, after a SaslHandshake on an
// authenticated connection, reauthenticating (only SaslAuthenticate until
// the exchange ends). failed ends every state.
type saslState struct {
	mechs     []SASLMechanism
	log       *slog.Logger
	limiter   *slowLog // rate limit of the failed-authentication lines
	listener  string
	maxReauth time.Duration // connections.max.reauth.ms; <= 0 is no session lifetime
	observer  AuthObserver  // nil: none

	mech           string       // chosen by SaslHandshake
	exchange       SASLExchange // started by SaslHandshake, nil once it ended
	authenticated  bool
	reauth         bool      // the exchange is a re-authentication
	expiry         time.Time // the session's end; zero is none
	supportsReauth bool      // the client sent SaslAuthenticate v1+ (KIP-368)
	failed         bool      // the reply being sent is the last
}

func newSASLState(l *Listener, log *slog.Logger, limiter *slowLog, observer AuthObserver) *saslState {
	return &saslState{mechs: l.SASL, log: log, limiter: limiter, listener: l.Name, maxReauth: l.MaxReauth, observer: observer}
}

// check reports whether a request with key, read at now, may be handled:
// nil, or ErrUnauthenticated or ErrSessionExpired, after which the
// connection is closed. now is when the request was read, not when it is
// dispatched: a request received within the session is served (KIP-368).
func (st *saslState) check(key int16, now time.Time) error {
	if st == nil {
		return nil
	}
	k := kmsg.Key(key)
	switch {
	case st.failed:
		return fmt.Errorf("%w: %s after a failed authentication", ErrUnauthenticated, kmsg.NameForKey(key))
	case st.reauth:
		if k == kmsg.SASLAuthenticate {
			return nil
		}
		return fmt.Errorf("%w: %s during re-authentication", ErrUnauthenticated, kmsg.NameForKey(key))
	case st.authenticated:
		// A SaslHandshake begins a re-authentication, even past the
		// expiry (Kafka's Processor checks for it first).
		if k == kmsg.SASLHandshake || st.expiry.IsZero() || now.Before(st.expiry) {
			return nil
		}
		return fmt.Errorf("%w: %s %v after the session ended", ErrSessionExpired, kmsg.NameForKey(key), now.Sub(st.expiry).Round(time.Millisecond))
	}
	switch k {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return nil
	}
	return fmt.Errorf("%w: %s before authentication", ErrUnauthenticated, kmsg.NameForKey(key))
}

// closing reports that the connection is to close after the current reply.
func (st *saslState) closing() bool { return st != nil && st.failed }

// sessionLifetime returns the session lifetime of an exchange that ended
// at now (KIP-368): zero (none) when re-authentication is off, else the
// least of maxReauth and the credential's remaining lifetime, never below
// zero.
func sessionLifetime(maxReauth time.Duration, ex SASLExchange, now time.Time) time.Duration {
	if maxReauth <= 0 {
		return 0
	}
	life := maxReauth
	if e, ok := ex.(SASLExpiringExchange); ok {
		if exp := e.CredentialExpiry(); !exp.IsZero() {
			life = min(life, exp.Sub(now))
		}
	}
	return max(life, 0)
}

func (st *saslState) observe(err error) {
	if st.observer != nil {
		st.observer.ObserveAuthentication(st.listener, st.mech, st.reauth, err)
	}
}
