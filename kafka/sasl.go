package kafka

import (
	"context"
	"errors"
	"log/slog"

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

// ErrSASLAuthFailed is the error a SASLExchange returns for credentials
// that do not verify.
var ErrSASLAuthFailed = errors.New("SASL authentication failed")

// ErrUnauthenticated: a request other than ApiVersions and the SASL APIs
// came on a SASL listener's connection before it authenticated; the
// connection is closed.
var ErrUnauthenticated = errors.New("kafka: request before SASL authentication")

// saslState is a SASL listener's connection's progress. Only the
// dispatcher goroutine uses it. A nil *saslState is a listener without
// SASL: everything is allowed and nothing closes.
type saslState struct {
	mechs   []SASLMechanism
	log     *slog.Logger
	limiter *slowLog // rate limit of the failed-authentication lines

	mech          string       // chosen by SaslHandshake
	exchange      SASLExchange // started by SaslHandshake
	authenticated bool
	failed        bool // the reply being sent is the last
}

func newSASLState(mechs []SASLMechanism, log *slog.Logger, limiter *slowLog) *saslState {
	return &saslState{mechs: mechs, log: log, limiter: limiter}
}

// allows reports whether a request with key may be handled now.
func (st *saslState) allows(key int16) bool {
	if st == nil || st.authenticated {
		return true
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return !st.failed
	}
	return false
}

// closing reports that the connection is to close after the current reply.
func (st *saslState) closing() bool { return st != nil && st.failed }
