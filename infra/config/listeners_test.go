package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestListenWithoutListenersIsOnePlaintextListener(t *testing.T) {
	b := Defaults()
	b.Listen = "127.0.0.1:9092"
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []Listener{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Listen: "127.0.0.1:9092", Advertise: "127.0.0.1:9092"}}
	if got := b.ListenerConfigs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("listeners %+v, want %+v", got, want)
	}
	if got := b.AdvertisedListenerList(); got != "PLAINTEXT://127.0.0.1:9092" {
		t.Fatalf("advertised %q", got)
	}
}

func TestListeners(t *testing.T) {
	b := Defaults()
	b.Listeners = "ssl://0.0.0.0:9093, INTERNAL://10.0.0.5:9094,PLAINTEXT://127.0.0.1:9092"
	b.AdvertisedListeners = "SSL://kafka.example.com:9093"
	b.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:PLAINTEXT"
	b.InterBrokerListenerName = "internal"
	b.SSLCertificateLocation, b.SSLKeyLocation = "/etc/shale/tls.crt", "/etc/shale/tls.key"
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []Listener{
		{Name: "INTERNAL", Protocol: "PLAINTEXT", Listen: "10.0.0.5:9094", Advertise: "10.0.0.5:9094"},
		{Name: "SSL", Protocol: "SSL", Listen: "0.0.0.0:9093", Advertise: "kafka.example.com:9093"},
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Listen: "127.0.0.1:9092", Advertise: "127.0.0.1:9092"},
	}
	if got := b.ListenerConfigs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("listeners\n%+v, want\n%+v", got, want)
	}
	if b.Listen != "10.0.0.5:9094" || b.Advertise != "10.0.0.5:9094" {
		t.Fatalf("listen %q advertise %q: want the inter-broker listener's", b.Listen, b.Advertise)
	}
	b.SetListenerAdvertise("INTERNAL", "10.0.0.5:19094")
	if b.Advertise != "10.0.0.5:19094" || !strings.HasPrefix(b.AdvertisedListenerList(), "INTERNAL://10.0.0.5:19094,SSL://") {
		t.Fatalf("after SetListenerAdvertise: advertise %q, list %q", b.Advertise, b.AdvertisedListenerList())
	}
}

func TestInterBrokerListenerOfEachProtocol(t *testing.T) {
	for _, tc := range []struct {
		listeners, name string
		set             func(b *Broker)
		principal, mech string
	}{
		{"PLAINTEXT://:1", "PLAINTEXT", func(*Broker) {}, "User:ANONYMOUS", ""},
		{"SSL://:1", "SSL", func(b *Broker) { b.SSLCertificateLocation, b.SSLKeyLocation = "c", "k" }, "", ""},
		{"SASL_PLAINTEXT://:1", "SASL_PLAINTEXT", func(b *Broker) { b.InterBrokerSASLUsername, b.InterBrokerSASLPassword = "broker", "p" },
			"User:broker", "SCRAM-SHA-256"},
		{"SASL_SSL://:1,PLAINTEXT://:2", "sasl_ssl", func(b *Broker) {
			b.SSLCertificateLocation, b.SSLKeyLocation = "c", "k"
			b.InterBrokerSASLUsername, b.InterBrokerSASLPasswordFile, b.SASLMechanismInterBrokerProtocol = "broker", "f", "scram-sha-512"
		}, "User:broker", "SCRAM-SHA-512"},
	} {
		b := Defaults()
		b.Listeners, b.InterBrokerListenerName = tc.listeners, tc.name
		tc.set(&b)
		if err := b.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.listeners, err)
		}
		if ib := b.InterBrokerListener(); ib.Name != strings.ToUpper(tc.name) || b.InterBrokerPrincipal() != tc.principal ||
			b.SASLMechanismInterBrokerProtocol != tc.mech {
			t.Fatalf("%s: listener %+v principal %q mechanism %q", tc.listeners, ib, b.InterBrokerPrincipal(), b.SASLMechanismInterBrokerProtocol)
		}
	}
}

func TestInterBrokerPasswordFile(t *testing.T) {
	b := Defaults()
	b.InterBrokerSASLPasswordFile = t.TempDir() + "/pass"
	if _, err := b.InterBrokerPassword(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(b.InterBrokerSASLPasswordFile, []byte("s3cret\r\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := b.InterBrokerPassword(); err != nil || p != "s3cret" {
		t.Fatalf("password %q, %v", p, err)
	}
	if err := os.WriteFile(b.InterBrokerSASLPasswordFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.InterBrokerPassword(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty first line: %v", err)
	}
}

func TestListenersRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(b *Broker)
		want string
	}{
		{"bad item", func(b *Broker) { b.Listeners = "127.0.0.1:9092" }, "NAME://host:port"},
		{"twice", func(b *Broker) { b.Listeners = "PLAINTEXT://:1,plaintext://:2" }, "twice"},
		{"unknown protocol", func(b *Broker) { b.Listeners, b.ListenerSecurityProtocolMap = "A://:1", "A:TLS" }, "protocol TLS"},
		{"no protocol", func(b *Broker) { b.Listeners = "INTERNAL://:1" }, "no security protocol"},
		{"sasl inter-broker without user", func(b *Broker) { b.Listeners, b.InterBrokerListenerName = "SASL_PLAINTEXT://:1", "SASL_PLAINTEXT" }, "inter_broker_sasl_username"},
		{"sasl inter-broker without password", func(b *Broker) {
			b.Listeners, b.InterBrokerListenerName, b.InterBrokerSASLUsername = "SASL_PLAINTEXT://:1", "SASL_PLAINTEXT", "broker"
		}, "inter_broker_sasl_password"},
		{"sasl inter-broker with two passwords", func(b *Broker) {
			b.Listeners, b.InterBrokerListenerName, b.InterBrokerSASLUsername = "SASL_PLAINTEXT://:1", "SASL_PLAINTEXT", "broker"
			b.InterBrokerSASLPassword, b.InterBrokerSASLPasswordFile = "p", "f"
		}, "one of"},
		{"sasl inter-broker mechanism not enabled", func(b *Broker) {
			b.Listeners, b.InterBrokerListenerName, b.InterBrokerSASLUsername, b.InterBrokerSASLPassword = "SASL_SSL://:1", "SASL_SSL", "broker", "p"
			b.SSLCertificateLocation, b.SSLKeyLocation, b.SASLMechanismInterBrokerProtocol = "c", "k", "PLAIN"
		}, "not in sasl_enabled_mechanisms"},
		{"plain without users", func(b *Broker) { b.Listeners, b.SASLEnabledMechanisms = "PLAINTEXT://:1,SASL_PLAINTEXT://:2", "PLAIN" }, "sasl_plain_users_file"},
		{"oauthbearer without a JWKS", func(b *Broker) {
			b.Listeners, b.SASLEnabledMechanisms = "PLAINTEXT://:1,SASL_PLAINTEXT://:2", "OAUTHBEARER"
		}, "sasl_oauthbearer_jwks_endpoint_url"},
		{"negative connections_max_reauth", func(b *Broker) { b.Listeners, b.ConnectionsMaxReauth = "PLAINTEXT://:1", -time.Second }, "connections_max_reauth"},
		{"unknown mechanism", func(b *Broker) { b.Listeners, b.SASLEnabledMechanisms = "PLAINTEXT://:1", "GSSAPI" }, "GSSAPI"},
		{"ssl inter-broker without files", func(b *Broker) { b.Listeners, b.InterBrokerListenerName = "SSL://:1", "SSL" }, "ssl_certificate_location"},
		{"inter-broker missing", func(b *Broker) { b.Listeners, b.InterBrokerListenerName = "PLAINTEXT://:1", "INTERNAL" }, "not in listeners"},
		{"ssl without files", func(b *Broker) { b.Listeners = "PLAINTEXT://:1,SSL://:2" }, "ssl_certificate_location"},
		{"advertised unknown", func(b *Broker) { b.Listeners, b.AdvertisedListeners = "PLAINTEXT://:1", "SSL://h:2" }, "which listeners does not"},
		{"advertised alone", func(b *Broker) { b.AdvertisedListeners = "PLAINTEXT://h:2" }, "without listeners"},
		{"client auth", func(b *Broker) { b.Listeners, b.SSLClientAuth = "PLAINTEXT://:1", "always" }, "ssl_client_auth"},
		{"client auth without CA", func(b *Broker) { b.Listeners, b.SSLClientAuth = "PLAINTEXT://:1", "required" }, "ssl_ca_location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Defaults()
			tc.set(&b)
			err := b.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalidConfig with %q", err, tc.want)
			}
		})
	}
}

func TestAdminListenerSettings(t *testing.T) {
	for _, tc := range []struct {
		set  func(b *Broker)
		want string // "" valid
	}{
		{func(b *Broker) {}, ""},
		{func(b *Broker) { b.AdminSSLCertificateLocation = "c" }, "go together"},
		{func(b *Broker) { b.AdminSSLClientAuth = "required" }, "admin_ssl_client_auth=required needs"},
		{func(b *Broker) {
			b.AdminSSLCertificateLocation, b.AdminSSLKeyLocation, b.AdminSSLClientAuth = "c", "k", "requested"
		}, "needs"},
		{func(b *Broker) { b.AdminSSLClientAuth = "always" }, "want required"},
		{func(b *Broker) {
			b.AdminSSLCertificateLocation, b.AdminSSLKeyLocation, b.AdminSSLCALocation, b.AdminSSLClientAuth = "c", "k", "ca", "required"
		}, ""},
	} {
		b := Defaults()
		tc.set(&b)
		err := b.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)) {
			t.Fatalf("%+v: %v, want %q", b.AdminSSLClientAuth, err, tc.want)
		}
	}
	b := Defaults()
	if b.AdminPprofEnable || b.AdminHealthUnauthenticated || b.AdminAuthenticates() {
		t.Fatal("defaults: pprof on, health open or authentication on")
	}
	b.AdminAuthTokensFile = "tokens"
	if !b.AdminAuthenticates() || b.AdminClientCerts() {
		t.Fatal("a tokens file does not turn authentication on")
	}
}
