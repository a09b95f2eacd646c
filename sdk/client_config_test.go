package sdk

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/testcerts"
)

func configOf(t *testing.T, props map[string]string) config {
	t.Helper()
	opts, err := ClientConfig(props)
	if err != nil {
		t.Fatalf("ClientConfig(%v): %v", keysOf(props), err)
	}
	c, err := newConfig(append(opts, WithSeeds("127.0.0.1:1")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keysOf(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	return k
}

func TestClientConfigSASL(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("eyJ.a.b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		props                string
		mech, user, password string
		tls                  bool
	}{
		{"security.protocol=sasl_plaintext sasl.mechanisms=PLAIN sasl.username=u sasl.password=p", "PLAIN", "u", "p", false},
		{`security.protocol=SASL_SSL sasl.mechanism=SCRAM-SHA-256 sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule␣required␣username="bob"␣password="a\"b";`, "SCRAM-SHA-256", "bob", `a"b`, true},
		{`security.protocol=SASL_SSL sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule␣required␣username=bob␣password=x; sasl.password=y`, "PLAIN", "bob", "y", true},
		{"security.protocol=SASL_SSL sasl.mechanism=OAUTHBEARER sasl.oauthbearer.token.endpoint.url=file://" + token, "OAUTHBEARER", "", "eyJ.a.b", true},
	} {
		props := map[string]string{}
		for _, kv := range strings.Fields(c.props) {
			k, v, _ := strings.Cut(kv, "=")
			props[k] = strings.ReplaceAll(v, "␣", " ")
		}
		cfg := configOf(t, props)
		if cfg.sasl == nil || cfg.sasl.mechanism != c.mech || cfg.sasl.user != c.user || cfg.sasl.password != c.password || (cfg.tls != nil) != c.tls {
			t.Errorf("%s: got %+v tls %v", c.props, cfg.sasl, cfg.tls != nil)
		}
		if want := map[bool]int{false: 1, true: 2}[c.tls]; len(cfg.security) != want {
			t.Errorf("%s: %d kgo options", c.props, len(cfg.security))
		}
	}
}

func TestClientConfigTLS(t *testing.T) {
	cfg := configOf(t, map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"})
	if cfg.tls == nil || !cfg.tls.InsecureSkipVerify || cfg.tls.VerifyConnection == nil || cfg.tls.MinVersion != tls.VersionTLS12 {
		t.Fatalf("endpoint identification none: %+v", cfg.tls)
	}
	// The chain is still checked: a connection without certificates fails.
	if err := cfg.tls.VerifyConnection(tls.ConnectionState{}); err == nil {
		t.Fatal("no certificate verified")
	}
	if cfg := configOf(t, map[string]string{"security.protocol": "SSL"}); cfg.tls.InsecureSkipVerify || cfg.sasl != nil {
		t.Fatalf("SSL: %+v", cfg.tls)
	}
	if cfg := configOf(t, map[string]string{}); cfg.tls != nil || cfg.sasl != nil || len(cfg.security) != 0 {
		t.Fatal("no properties must mean PLAINTEXT")
	}
}

func TestClientConfigErrorsKeepSecrets(t *testing.T) {
	for _, props := range []map[string]string{
		{"sasl.pasword": "s3cret"},
		{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-1", "sasl.username": "u", "sasl.password": "s3cret"},
		{"security.protocol": "SASL_SSL", "sasl.jaas.config": `x.y.OAuthBearerLoginModule required password="s3cret";`},
		{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": `x.y.PlainLoginModule required username="u" password="s3cret";`},
		{"security.protocol": "PLAINTEXT", "sasl.password": "s3cret"},
		{"security.protocol": "SSL", "ssl.truststore.location": "/x", "ssl.truststore.type": "JKS"},
		{"security.protocol": "SSL", "ssl.certificate.location": "/x"},
	} {
		_, err := ClientConfig(props)
		if !errors.Is(err, ErrInvalidOption) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: %v", keysOf(props), err)
		}
	}
	if _, err := newConfig([]Option{WithSeeds("x:1"), WithSASL("SCRAM-SHA-512", "", "s3cret")}); !errors.Is(err, ErrInvalidOption) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("WithSASL without a user: %v", err)
	}
}

// TestEndpointIdentificationNone: with ssl.endpoint.identification.algorithm
// none a certificate that does not name the host dialed is accepted, but
// only if it chains to ssl.ca.location; with https it is refused.
func TestEndpointIdentificationNone(t *testing.T) {
	dir := t.TempDir()
	ca, other := testcerts.NewCA(t, "ca"), testcerts.NewCA(t, "other")
	certPEM, keyPEM := ca.Server(t, "broker-0") // for 127.0.0.1 and localhost
	serverCert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	handshake := func(props map[string]string) error {
		cfg := configOf(t, props).tls.Clone()
		cfg.ServerName = "kafka-0.example.com" // not in the certificate
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s, err := ln.Accept()
			if err != nil {
				return
			}
			defer s.Close()
			s.SetDeadline(time.Now().Add(10 * time.Second))
			tls.Server(s, &tls.Config{Certificates: []tls.Certificate{serverCert}}).Handshake()
		}()
		defer func() { <-done }()
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return tls.Client(c, cfg).Handshake()
	}
	caFile := testcerts.Write(t, dir, "ca.crt", ca.CertPEM)
	otherFile := testcerts.Write(t, dir, "other.crt", other.CertPEM)
	if err := handshake(map[string]string{"security.protocol": "SSL", "ssl.ca.location": caFile}); err == nil {
		t.Error("https accepted a certificate for another host")
	}
	if err := handshake(map[string]string{"security.protocol": "SSL", "ssl.ca.location": caFile, "ssl.endpoint.identification.algorithm": "none"}); err != nil {
		t.Errorf("none refused a certificate of the CA: %v", err)
	}
	if err := handshake(map[string]string{"security.protocol": "SSL", "ssl.ca.location": otherFile, "ssl.endpoint.identification.algorithm": "none"}); err == nil {
		t.Error("none accepted a certificate of another CA")
	}
}
