package kafka

import (
	"crypto/tls"
	"net"
	"strconv"
	"strings"
	"time"
)

// Listener is one of a Server's named listeners (Kafka's listeners): the
// name its connections carry in ConnInfo and, for an SSL or SASL_SSL
// listener, the TLS configuration (for example tlsreload.Reloader.ServerConfig).
type Listener struct {
	Name string
	// TLS, when set, makes each connection start with a TLS handshake;
	// nil serves plaintext.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake; zero is 10 seconds.
	HandshakeTimeout time.Duration
	// SASL, when set, makes the listener a SASL_PLAINTEXT or SASL_SSL
	// one: until a client authenticates with one of these mechanisms
	// (SaslHandshake, SaslAuthenticate) only ApiVersions and the SASL APIs
	// are answered, and any other request closes the connection.
	SASL []SASLMechanism
	// MaxReauth is connections.max.reauth.ms of a SASL listener (KIP-368):
	// when positive, each authentication's session lasts at most this
	// long (less when the credential expires sooner, an OAUTHBEARER
	// token), SaslAuthenticate tells the client so, and a connection that
	// has not re-authenticated by then is closed at its next request.
	// Zero, Kafka's default, gives sessions no end.
	MaxReauth time.Duration
	// PrincipalMapper is ssl.principal.mapping.rules of a TLS listener: it
	// names the principal of a client certificate's subject; a subject no
	// rule maps fails the connection (Kafka fails its authentication).
	// Nil is Kafka's DEFAULT, the subject as it is.
	PrincipalMapper *SSLPrincipalMapper
	// InterBroker marks the listener the other nodes dial
	// (inter.broker.listener.name): its connections are counted against
	// ServerConfig.Connections.MaxConnections but never refused by it, as
	// Kafka keeps replication possible at the limit.
	InterBroker bool
}

// handshake runs the TLS handshake of a TLS listener's connection within
// its timeout and sets the connection's principal from the client
// certificate. It reports false, after a rate-limited log line, when the
// handshake failed and the connection is to be closed.
func (c *conn) handshake() bool {
	tc := c.nc.(*tls.Conn)
	tc.SetDeadline(time.Now().Add(c.handshakeTimeout))
	if err := tc.HandshakeContext(c.ctx); err != nil {
		if ok, held := c.s.handshakeLog.allow(time.Now()); ok && !c.stopping.Load() {
			c.log.Info("kafka: TLS handshake failed, closing connection", "err", err, "suppressed", held)
		}
		return false
	}
	tc.SetDeadline(time.Time{})
	c.info.TLS = true
	p, err := certPrincipal(tc.ConnectionState(), c.mapper)
	if err != nil {
		if ok, held := c.s.handshakeLog.allow(time.Now()); ok {
			c.log.Info("kafka: TLS client certificate maps to no principal, closing connection", "err", err, "suppressed", held)
		}
		return false
	}
	c.info.Principal = p
	// A stopReading during the handshake set a deadline the line above
	// cleared; readSize checks stopping after arming its own.
	return true
}

// AdvertisedAddr returns the address a broker advertises on listener:
// listeners is the broker's registration of its advertised listeners in
// Kafka's form, NAME://host:port,NAME://host:port. A broker that
// registered no listeners (an older node) advertises host and port on
// every listener. ok is false when the broker has listeners but none of
// that name: Kafka leaves such a broker out of the answer to a client of
// that listener.
//
// An empty listener (a request made without a connection, in tests) is
// answered with host and port.
func AdvertisedAddr(listeners, listener, host string, port int32) (string, int32, bool) {
	if listeners == "" || listener == "" {
		return host, port, true
	}
	for _, item := range strings.Split(listeners, ",") {
		name, hp, ok := strings.Cut(item, "://")
		if !ok || !strings.EqualFold(name, listener) {
			continue
		}
		h, ps, err := net.SplitHostPort(hp)
		if err != nil {
			return "", 0, false
		}
		p, err := strconv.Atoi(ps)
		if err != nil {
			return "", 0, false
		}
		return h, int32(p), true
	}
	return "", 0, false
}

// ListenerName is the name of the listener the request came in on, or ""
// for a request without a connection.
func (r *Request) ListenerName() string {
	if r.Conn == nil {
		return ""
	}
	return r.Conn.Listener
}
