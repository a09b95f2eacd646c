package kafka

import "crypto/tls"

// AnonymousPrincipal is the principal of a connection that proved no
// identity (Kafka's KafkaPrincipal.ANONYMOUS).
const AnonymousPrincipal = "User:ANONYMOUS"

// certPrincipal is Kafka's SSL principal: "User:" and the client
// certificate's subject as an RFC 2253 distinguished name, mapped by m
// (ssl.principal.mapping.rules; nil is the subject as it is), or
// AnonymousPrincipal without a certificate.
func certPrincipal(st tls.ConnectionState, m *SSLPrincipalMapper) (string, error) {
	if len(st.PeerCertificates) == 0 {
		return AnonymousPrincipal, nil
	}
	name, err := m.Name(st.PeerCertificates[0].Subject.String())
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}
