package kafka

// SaslAuthenticate (key 36), versions 0-2.
//
//   - v0 (KIP-152): one step of the exchange SaslHandshake chose.
//   - v1: SessionLifetimeMillis (KIP-368): with Listener.MaxReauth
//     (connections.max.reauth.ms) set, the least of it and the
//     credential's remaining lifetime (an OAUTHBEARER token's exp), else 0.
//     A client that sent v1+ may re-authenticate on the same connection
//     (SaslHandshake, then SaslAuthenticate); the principal must not
//     change. A request other than SaslHandshake read after the lifetime
//     closes the connection; one read before it is served, however late it
//     is dispatched (see saslState.check). v2: flexible.
//   - A SCRAM login with a delegation token (KIP-48, the tokenauth=true
//     extension) makes the token's owner the principal and marks the
//     session token-authenticated (SASLTokenExchange); its session
//     lifetime is at most the token's remaining life.
//   - Bad credentials (or a malformed message) are SASL_AUTHENTICATION_FAILED
//     with a message that names the mechanism only, a log line without the
//     secret (at most five a second per server), the AuthObserver's
//     failure, and a closed connection.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleSASLAuthenticate(ctx context.Context, req *Request) (Reply, error) {
	r := req.Msg.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	st := req.Conn.sasl
	if st == nil || st.exchange == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if st != nil {
			st.failed = true
		}
		return Reply{Response: resp}, nil
	}
	if r.Version >= 1 {
		st.supportsReauth = true
	}
	what := "authentication"
	if st.reauth {
		what = "re-authentication"
	}
	out, done, user, err := st.exchange.Step(ctx, r.SASLAuthBytes)
	msg := fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, st.mech)
	if err == nil && done && st.reauth && "User:"+user != req.Conn.Principal {
		err = fmt.Errorf("%w: cannot change principals during re-authentication from %s: User:%s", ErrSASLAuthFailed, req.Conn.Principal, user)
		msg = fmt.Sprintf("Cannot change principals during re-authentication from %s: User:%s", req.Conn.Principal, user)
	}
	if err != nil {
		st.failed = true
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		if ok, held := st.limiter.allow(time.Now()); ok {
			st.log.Info("kafka: SASL "+what+" failed, closing connection", "mechanism", st.mech, "err", err, "suppressed", held)
		}
		st.observe(err)
		return Reply{Response: resp}, nil
	}
	resp.SASLAuthBytes = out
	if done {
		now := time.Now()
		life := sessionLifetime(st.maxReauth, st.exchange, now)
		st.expiry = time.Time{}
		if st.maxReauth > 0 {
			st.expiry = now.Add(life)
		}
		resp.SessionLifetimeMillis = life.Milliseconds()
		st.observe(nil)
		ex := st.exchange
		st.authenticated, st.reauth, st.exchange = true, false, nil
		req.Conn.Principal = "User:" + user
		tx, ok := ex.(SASLTokenExchange)
		req.Conn.TokenAuthenticated = ok && tx.TokenAuthenticated()
	}
	return Reply{Response: resp}, nil
}
