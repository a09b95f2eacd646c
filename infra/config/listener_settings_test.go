package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestListenerSettings: listener_name.<name> (YAML) and --listener-name
// NAME.key=value set one listener's TLS settings over the node's; the
// others keep the node's.
func TestListenerSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shale.yaml")
	yaml := `listeners: PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094,MTLS://127.0.0.1:9095
listener_security_protocol_map: PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,MTLS:SSL
ssl_certificate_location: /tls/node.crt
ssl_key_location: /tls/node.key
ssl_ca_location: /tls/ca.crt
ssl_client_auth: required
listener_name:
  sasl_ssl:
    ssl_client_auth: none
    ssl_certificate_location: /tls/sasl.crt
    ssl_key_location: /tls/sasl.key
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	b := Defaults()
	if err := b.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	flags := BindFlags(fs)
	if err := fs.Parse([]string{"--listener-name", "MTLS.ssl_ca_location=/tls/partners.crt", "--listener-name", "mtls.ssl_principal_mapping_rules=RULE:^CN=(.*)$/$1/,DEFAULT"}); err != nil {
		t.Fatal(err)
	}
	if err := flags.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]ListenerTLS{
		"SSL":      {CertFile: "/tls/node.crt", KeyFile: "/tls/node.key", CAFile: "/tls/ca.crt", ClientAuth: "required", PrincipalMappingRules: "DEFAULT"},
		"SASL_SSL": {CertFile: "/tls/sasl.crt", KeyFile: "/tls/sasl.key", CAFile: "/tls/ca.crt", ClientAuth: "none", PrincipalMappingRules: "DEFAULT"},
		"MTLS":     {CertFile: "/tls/node.crt", KeyFile: "/tls/node.key", CAFile: "/tls/partners.crt", ClientAuth: "required", PrincipalMappingRules: "RULE:^CN=(.*)$/$1/,DEFAULT"},
	} {
		if got := b.ListenerTLS(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}

	if got := strings.Join(b.AnonymousListeners(), ","); got != "PLAINTEXT" {
		t.Errorf("AnonymousListeners %q, want PLAINTEXT (SSL and MTLS require certificates, SASL_SSL a login)", got)
	}
	b.ListenerName["SSL"] = ListenerSettings{SSLClientAuth: "requested"}
	if got := strings.Join(b.AnonymousListeners(), ","); got != "PLAINTEXT,SSL" {
		t.Errorf("AnonymousListeners %q with SSL requested, want PLAINTEXT,SSL", got)
	}

	if err := fs.Parse([]string{"--listener-name", "SSL.ssl_protocol=TLSv1.3"}); err == nil {
		t.Error("--listener-name with an unknown key was taken")
	}
	for _, tc := range []struct {
		name string
		set  func(*Broker)
	}{
		{"no such listener", func(b *Broker) { b.ListenerName = map[string]ListenerSettings{"CLIENTS": {SSLClientAuth: "none"}} }},
		{"a plaintext listener", func(b *Broker) { b.ListenerName = map[string]ListenerSettings{"PLAINTEXT": {SSLClientAuth: "none"}} }},
		{"bad client auth", func(b *Broker) { b.ListenerName = map[string]ListenerSettings{"SSL": {SSLClientAuth: "maybe"}} }},
		{"requested without a CA", func(b *Broker) {
			b.SSLCALocation = ""
			b.ListenerName = map[string]ListenerSettings{"SSL": {SSLClientAuth: "requested"}}
		}},
		{"without listeners", func(b *Broker) {
			b.Listeners, b.ListenerSecurityProtocolMap = "", ""
			b.ListenerName = map[string]ListenerSettings{"PLAINTEXT": {}}
		}},
	} {
		b := Defaults()
		b.Listeners = "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"
		b.SSLCertificateLocation, b.SSLKeyLocation, b.SSLCALocation = "/tls/node.crt", "/tls/node.key", "/tls/ca.crt"
		tc.set(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", tc.name, err)
		}
	}
}
