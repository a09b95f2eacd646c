package config

import (
	"fmt"
	"sort"
	"strings"
)

// ListenerSettings are the settings one listener may set for itself,
// Kafka's listener.name.<name>.ssl.*: in YAML under listener_name and the
// listener's name, on the command line --listener-name NAME.key=value. An
// empty field takes the node-wide setting of the same key.
type ListenerSettings struct {
	SSLCertificateLocation   string `yaml:"ssl_certificate_location"`
	SSLKeyLocation           string `yaml:"ssl_key_location"`
	SSLCALocation            string `yaml:"ssl_ca_location"`
	SSLClientAuth            string `yaml:"ssl_client_auth"`
	SSLPrincipalMappingRules string `yaml:"ssl_principal_mapping_rules"`
}

// listenerSettingKeys are the keys of ListenerSettings, for flags and errors.
var listenerSettingKeys = []string{"ssl_certificate_location", "ssl_key_location", "ssl_ca_location", "ssl_client_auth", "ssl_principal_mapping_rules"}

// field returns the field of s named key, or nil.
func (s *ListenerSettings) field(key string) *string {
	switch key {
	case "ssl_certificate_location":
		return &s.SSLCertificateLocation
	case "ssl_key_location":
		return &s.SSLKeyLocation
	case "ssl_ca_location":
		return &s.SSLCALocation
	case "ssl_client_auth":
		return &s.SSLClientAuth
	case "ssl_principal_mapping_rules":
		return &s.SSLPrincipalMappingRules
	}
	return nil
}

// SetListenerSetting sets key of listener's settings (the flag
// --listener-name LISTENER.key=value).
func (b *Broker) SetListenerSetting(listener, key, value string) error {
	var s ListenerSettings
	if s.field(key) == nil {
		return fmt.Errorf("%w: --listener-name %s.%s: want one of %s", ErrInvalidConfig, listener, key, strings.Join(listenerSettingKeys, ", "))
	}
	if b.ListenerName == nil {
		b.ListenerName = map[string]ListenerSettings{}
	}
	name := strings.ToUpper(listener)
	s = b.ListenerName[name]
	*s.field(key) = value
	b.ListenerName[name] = s
	return nil
}

// ListenerTLS is the TLS of one listener after Validate: its own settings
// (listener_name) where it has them, else the node's.
type ListenerTLS struct {
	CertFile, KeyFile, CAFile string
	ClientAuth                string // none, requested or required
	PrincipalMappingRules     string
}

// ListenerTLS returns the TLS settings of the listener named name.
func (b *Broker) ListenerTLS(name string) ListenerTLS {
	o := b.ListenerName[strings.ToUpper(name)]
	pick := func(own, node string) string {
		if own != "" {
			return own
		}
		return node
	}
	t := ListenerTLS{
		CertFile:              pick(o.SSLCertificateLocation, b.SSLCertificateLocation),
		KeyFile:               pick(o.SSLKeyLocation, b.SSLKeyLocation),
		CAFile:                pick(o.SSLCALocation, b.SSLCALocation),
		ClientAuth:            pick(o.SSLClientAuth, b.SSLClientAuth),
		PrincipalMappingRules: pick(o.SSLPrincipalMappingRules, b.SSLPrincipalMappingRules),
	}
	if t.ClientAuth == "" {
		t.ClientAuth = "none"
	}
	return t
}

// validateListenerSettings checks listener_name against the resolved
// listeners: each name is a TLS listener (a setting of another would be
// ignored, which hides a typo), and each TLS listener's settings, its own
// and the node's put together, make a TLS configuration.
func (b *Broker) validateListenerSettings(ls []Listener) error {
	names := make([]string, 0, len(b.ListenerName))
	for name := range b.ListenerName {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		up := strings.ToUpper(name)
		if up != name {
			// Listener names are upper case; keep one spelling.
			if _, dup := b.ListenerName[up]; dup {
				return fmt.Errorf("%w: listener_name names %s twice", ErrInvalidConfig, up)
			}
			b.ListenerName[up] = b.ListenerName[name]
			delete(b.ListenerName, name)
		}
		var found *Listener
		for i := range ls {
			if ls[i].Name == up {
				found = &ls[i]
			}
		}
		switch {
		case found == nil:
			return fmt.Errorf("%w: listener_name.%s: no such listener in listeners", ErrInvalidConfig, up)
		case !found.TLS():
			return fmt.Errorf("%w: listener_name.%s sets TLS settings, but %s is a %s listener", ErrInvalidConfig, up, up, found.Protocol)
		}
	}
	for _, l := range ls {
		if !l.TLS() {
			continue
		}
		t := b.ListenerTLS(l.Name)
		if t.CertFile == "" || t.KeyFile == "" {
			return fmt.Errorf("%w: listener %s (%s) needs ssl_certificate_location and ssl_key_location", ErrInvalidConfig, l.Name, l.Protocol)
		}
		switch t.ClientAuth {
		case "none", "requested", "required":
		default:
			return fmt.Errorf("%w: listener %s: ssl_client_auth %q: want required, requested or none", ErrInvalidConfig, l.Name, t.ClientAuth)
		}
		if t.ClientAuth != "none" && t.CAFile == "" {
			return fmt.Errorf("%w: listener %s: ssl_client_auth=%s needs ssl_ca_location", ErrInvalidConfig, l.Name, t.ClientAuth)
		}
	}
	return nil
}

// AnonymousListeners returns, after Validate, the listeners on which a
// client that presents no credential is served as User:ANONYMOUS: the
// PLAINTEXT ones, and the SSL ones whose ssl_client_auth is none or
// requested. Naming User:ANONYMOUS in super_users makes every such client a
// super user.
func (b *Broker) AnonymousListeners() []string {
	var out []string
	for _, l := range b.resolved {
		switch {
		case l.Protocol == ProtocolPlaintext:
			out = append(out, l.Name)
		case l.Protocol == ProtocolSSL && b.ListenerTLS(l.Name).ClientAuth != "required":
			out = append(out, l.Name)
		}
	}
	return out
}
