package kafka

// SaslAuthenticate (key 36), versions 0-2.
//
//   - v0 (KIP-152): one step of the exchange SaslHandshake chose.
//   - v1: SessionLifetimeMillis (KIP-368); always 0, re-authentication is
//     not asked for.  v2: flexible.
//   - Bad credentials (or a malformed message) are SASL_AUTHENTICATION_FAILED
//     with a message that names the mechanism only, a log line without the
//     secret (at most five a second per server), and a closed connection.

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
	if st == nil || st.exchange == nil || st.authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if st != nil {
			st.failed = true
		}
		return Reply{Response: resp}, nil
	}
	out, done, user, err := st.exchange.Step(ctx, r.SASLAuthBytes)
	if err != nil {
		st.failed = true
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", st.mech)
		resp.ErrorMessage = &msg
		if ok, held := st.limiter.allow(time.Now()); ok {
			st.log.Info("kafka: SASL authentication failed, closing connection", "mechanism", st.mech, "err", err, "suppressed", held)
		}
		return Reply{Response: resp}, nil
	}
	resp.SASLAuthBytes = out
	if done {
		st.authenticated = true
		req.Conn.Principal = "User:" + user
	}
	return Reply{Response: resp}, nil
}
