package kafka

// SaslHandshake (key 17), version 1.
//
//   - v1 (KIP-152): picks the mechanism; the exchange itself then runs in
//     SaslAuthenticate requests. v0, where raw SASL tokens follow the
//     handshake outside Kafka's framing, is not served.
//   - An unknown mechanism is UNSUPPORTED_SASL_MECHANISM with the list of
//     enabled ones, a second handshake or one on a listener without SASL is
//     ILLEGAL_SASL_STATE; both close the connection after the answer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RegisterSASL registers SaslHandshake and SaslAuthenticate. They act on the
// connection's SASL state (Listener.SASL); on a listener without SASL they
// answer ILLEGAL_SASL_STATE.
func RegisterSASL(reg *Registry) {
	reg.Register(kmsg.SASLHandshake, 1, 1, handleSASLHandshake)
	reg.Register(kmsg.SASLAuthenticate, 0, 2, handleSASLAuthenticate)
}

func handleSASLHandshake(_ context.Context, req *Request) (Reply, error) {
	r := req.Msg.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	st := req.Conn.sasl
	if st == nil || st.exchange != nil || st.authenticated {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if st != nil {
			st.failed = true
		}
		return Reply{Response: resp}, nil
	}
	for _, m := range st.mechs {
		resp.SupportedMechanisms = append(resp.SupportedMechanisms, m.Name())
		if m.Name() == r.Mechanism {
			st.mech, st.exchange = m.Name(), m.Start()
		}
	}
	if st.exchange == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		st.failed = true
	}
	return Reply{Response: resp}, nil
}
