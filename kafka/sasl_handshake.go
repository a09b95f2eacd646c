package kafka

// SaslHandshake (key 17), versions 0-1 advertised, v1 served.
//
//   - v1 (KIP-152): picks the mechanism; the exchange itself then runs in
//     SaslAuthenticate requests.
//   - v0, where raw SASL tokens follow the handshake outside Kafka's
//     framing, is not served: a v0 request is answered UNSUPPORTED_VERSION
//     (with the enabled mechanisms) and the connection closes. ApiVersions
//     still lists v0-1, as Kafka does (KIP-896 keeps v0), because librdkafka
//     before 2.10 (kcat, Debian's librdkafka 2.0) enables SASL only when
//     the broker's SaslHandshake range includes v0; it then sends v1.
//   - An unknown mechanism is UNSUPPORTED_SASL_MECHANISM with the list of
//     enabled ones, a second handshake before the exchange ended or one on
//     a listener without SASL is ILLEGAL_SASL_STATE; both close the
//     connection after the answer.
//   - On an authenticated connection whose client sent SaslAuthenticate
//     v1+, a handshake begins a re-authentication (KIP-368), which must use
//     the same mechanism (else ILLEGAL_SASL_STATE and the connection
//     closes; Kafka fails it at the next SaslAuthenticate) and end with
//     the same principal.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RegisterSASL registers SaslHandshake and SaslAuthenticate. They act on the
// connection's SASL state (Listener.SASL); on a listener without SASL they
// answer ILLEGAL_SASL_STATE.
func RegisterSASL(reg *Registry) {
	reg.Register(kmsg.SASLHandshake, 0, 1, handleSASLHandshake)
	reg.Register(kmsg.SASLAuthenticate, 0, 2, handleSASLAuthenticate)
}

func handleSASLHandshake(_ context.Context, req *Request) (Reply, error) {
	r := req.Msg.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	st := req.Conn.sasl
	if st == nil || st.exchange != nil || (st.authenticated && !st.supportsReauth) {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if st != nil {
			st.failed = true
		}
		return Reply{Response: resp}, nil
	}
	var chosen SASLMechanism
	for _, m := range st.mechs {
		resp.SupportedMechanisms = append(resp.SupportedMechanisms, m.Name())
		if m.Name() == r.Mechanism {
			chosen = m
		}
	}
	switch {
	case r.Version == 0:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		st.failed, st.reauth = true, st.authenticated
		st.observe(kerr.UnsupportedVersion)
	case chosen == nil:
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		st.failed, st.reauth = true, st.authenticated
		st.observe(kerr.UnsupportedSaslMechanism)
	case st.authenticated && chosen.Name() != st.mech:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		st.failed, st.reauth = true, true
		st.observe(kerr.IllegalSaslState)
	default:
		st.mech, st.exchange, st.reauth = chosen.Name(), chosen.Start(), st.authenticated
	}
	return Reply{Response: resp}, nil
}
