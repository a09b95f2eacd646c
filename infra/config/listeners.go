package config

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// Security protocols of a listener, Kafka's SecurityProtocol names.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// defaultProtocolMap is Kafka's default listener.security.protocol.map:
// each protocol name is a listener name of that protocol.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// Listener is one named Kafka listener after Validate: Kafka's listeners,
// advertised.listeners and listener.security.protocol.map put together.
type Listener struct {
	Name      string // the listener name, upper case (PLAINTEXT, INTERNAL, ...)
	Protocol  string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Listen    string // host:port to bind
	Advertise string // host:port clients are told; a port 0 is replaced by the bound port
}

// TLS reports whether the listener's connections start with a TLS handshake.
func (l Listener) TLS() bool { return l.Protocol == ProtocolSSL || l.Protocol == ProtocolSASLSSL }

// ListenerConfigs returns the listeners Validate resolved: the ones named
// by listeners, or the one PLAINTEXT listener on listen and advertise. The
// inter-broker listener is first. The caller may modify the returned slice
// (it is a copy).
func (b *Broker) ListenerConfigs() []Listener { return slices.Clone(b.resolved) }

// SetListenerAdvertise replaces the advertised address of the listener
// named name (a port 0 resolved to the port bound); the inter-broker one
// is also Advertise.
func (b *Broker) SetListenerAdvertise(name, hostPort string) {
	for i := range b.resolved {
		if b.resolved[i].Name == name {
			b.resolved[i].Advertise = hostPort
			if name == b.InterBrokerListenerName {
				b.Advertise = hostPort
			}
		}
	}
}

// AdvertisedListenerList returns the advertised listeners in Kafka's
// advertised.listeners form (NAME://host:port,...), as the broker registers
// them for Metadata.
func (b *Broker) AdvertisedListenerList() string {
	parts := make([]string, 0, len(b.resolved))
	for _, l := range b.resolved {
		parts = append(parts, l.Name+"://"+l.Advertise)
	}
	return strings.Join(parts, ",")
}

// parseListenerList parses Kafka's "NAME://host:port,NAME://host:port".
func parseListenerList(key, s string) ([][2]string, error) {
	var out [][2]string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: %s %q: want NAME://host:port", ErrInvalidConfig, key, item)
		}
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			return nil, fmt.Errorf("%w: %s %q: want NAME://host:port", ErrInvalidConfig, key, item)
		}
		name = strings.ToUpper(name)
		for _, o := range out {
			if o[0] == name {
				return nil, fmt.Errorf("%w: %s names listener %s twice", ErrInvalidConfig, key, name)
			}
		}
		out = append(out, [2]string{name, addr})
	}
	return out, nil
}

// resolveListeners checks the listener settings and fills b.resolved,
// b.Listen and b.Advertise (those of the inter-broker listener).
func (b *Broker) resolveListeners() error {
	if b.Listeners == "" {
		if len(b.ListenerName) > 0 {
			return fmt.Errorf("%w: listener_name without listeners", ErrInvalidConfig)
		}
		if b.AdvertisedListeners != "" {
			return fmt.Errorf("%w: advertised_listeners without listeners", ErrInvalidConfig)
		}
		if b.InterBrokerListenerName == "" {
			b.InterBrokerListenerName = ProtocolPlaintext
		}
		if b.InterBrokerListenerName != ProtocolPlaintext {
			return fmt.Errorf("%w: inter_broker_listener_name %s without listeners", ErrInvalidConfig, b.InterBrokerListenerName)
		}
		b.resolved = []Listener{{Name: ProtocolPlaintext, Protocol: ProtocolPlaintext, Listen: b.Listen, Advertise: b.Advertise}}
		return nil
	}
	protoMap := map[string]string{}
	pm := b.ListenerSecurityProtocolMap
	if pm == "" {
		pm = defaultProtocolMap
	}
	for _, item := range strings.Split(pm, ",") {
		name, proto, ok := strings.Cut(strings.TrimSpace(item), ":")
		proto = strings.ToUpper(proto)
		switch {
		case !ok || name == "":
			return fmt.Errorf("%w: listener_security_protocol_map %q: want NAME:PROTOCOL", ErrInvalidConfig, item)
		case proto != ProtocolPlaintext && proto != ProtocolSSL && proto != ProtocolSASLPlaintext && proto != ProtocolSASLSSL:
			return fmt.Errorf("%w: listener_security_protocol_map %q: protocol %s is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", ErrInvalidConfig, item, proto)
		}
		protoMap[strings.ToUpper(name)] = proto
	}
	ls, err := parseListenerList("listeners", b.Listeners)
	if err != nil {
		return err
	}
	if len(ls) == 0 {
		return fmt.Errorf("%w: listeners %q names no listener", ErrInvalidConfig, b.Listeners)
	}
	adv, err := parseListenerList("advertised_listeners", b.AdvertisedListeners)
	if err != nil {
		return err
	}
	advertised := map[string]string{}
	for _, a := range adv {
		advertised[a[0]] = a[1]
	}
	b.InterBrokerListenerName = strings.ToUpper(b.InterBrokerListenerName)
	if b.InterBrokerListenerName == "" {
		b.InterBrokerListenerName = ProtocolPlaintext
	}
	var out []Listener
	for _, l := range ls {
		proto, ok := protoMap[l[0]]
		if !ok {
			return fmt.Errorf("%w: listener %s has no security protocol in listener_security_protocol_map", ErrInvalidConfig, l[0])
		}
		a := advertised[l[0]]
		delete(advertised, l[0])
		if a == "" {
			a = l[1]
		}
		nl := Listener{Name: l[0], Protocol: proto, Listen: l[1], Advertise: a}
		if nl.Name == b.InterBrokerListenerName {
			out = append([]Listener{nl}, out...)
		} else {
			out = append(out, nl)
		}
	}
	for name := range advertised {
		return fmt.Errorf("%w: advertised_listeners names %s, which listeners does not", ErrInvalidConfig, name)
	}
	if out[0].Name != b.InterBrokerListenerName {
		return fmt.Errorf("%w: inter_broker_listener_name %s is not in listeners", ErrInvalidConfig, b.InterBrokerListenerName)
	}
	if err := b.validateListenerSettings(out); err != nil {
		return err
	}
	for _, m := range b.SASLMechanisms() {
		switch m {
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
		case "PLAIN":
			if b.SASLPlainUsersFile == "" {
				return fmt.Errorf("%w: sasl_enabled_mechanisms names PLAIN without sasl_plain_users_file", ErrInvalidConfig)
			}
		case "OAUTHBEARER":
			if b.SASLOAuthBearerJWKSEndpointURL == "" {
				return fmt.Errorf("%w: sasl_enabled_mechanisms names OAUTHBEARER without sasl_oauthbearer_jwks_endpoint_url", ErrInvalidConfig)
			}
		default:
			return fmt.Errorf("%w: sasl_enabled_mechanisms: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER", ErrInvalidConfig, m)
		}
	}
	if b.ConnectionsMaxReauth < 0 || b.SASLOAuthBearerClockSkew < 0 {
		return fmt.Errorf("%w: connections_max_reauth and sasl_oauthbearer_clock_skew must not be negative", ErrInvalidConfig)
	}
	switch b.SSLClientAuth {
	case "", "none", "requested", "required":
	default:
		return fmt.Errorf("%w: ssl_client_auth %q: want required, requested or none", ErrInvalidConfig, b.SSLClientAuth)
	}
	if b.SSLClientAuth != "" && b.SSLClientAuth != "none" && b.SSLCALocation == "" {
		return fmt.Errorf("%w: ssl_client_auth=%s needs ssl_ca_location", ErrInvalidConfig, b.SSLClientAuth)
	}
	if err := b.validateInterBroker(out[0]); err != nil {
		return err
	}
	b.resolved = out
	b.Listen, b.Advertise = out[0].Listen, out[0].Advertise
	return nil
}

// SASL reports whether the listener's clients authenticate with SASL.
func (l Listener) SASL() bool {
	return l.Protocol == ProtocolSASLPlaintext || l.Protocol == ProtocolSASLSSL
}

// SASLMechanisms returns sasl_enabled_mechanisms as a list, upper case.
func (b *Broker) SASLMechanisms() []string {
	var out []string
	for _, m := range strings.Split(b.SASLEnabledMechanisms, ",") {
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
			out = append(out, m)
		}
	}
	return out
}
