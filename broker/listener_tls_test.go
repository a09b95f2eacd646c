package broker_test

import (
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testlog"
	"github.com/shale-io/shale/internal/testnode"
)

// TestPerListenerTLSSettings: one node serves mTLS clients on its SSL
// listener (the node's ssl_client_auth: required) and password-only
// clients on its SASL_SSL listener, which sets ssl_client_auth none and a
// certificate of another CA for itself (Kafka's
// listener.name.<name>.ssl.*). franz-go without a client certificate logs
// in with SCRAM over SASL_SSL and is served the listener's own
// certificate; over SSL a client certificate is still required.
func TestPerListenerTLSSettings(t *testing.T) {
	ca, other := testcerts.NewCA(t, "shale-test-ca"), testcerts.NewCA(t, "sasl-listener-ca")
	saslCerts := other.ServerFiles(t, "broker-0")
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SSL", "SASL_SSL"),
		testnode.WithTLS(ca.ServerFiles(t, "broker-0"), "required"),
		func(c *config.Broker) {
			c.ListenerName = map[string]config.ListenerSettings{"SASL_SSL": {
				SSLClientAuth: "none", SSLCertificateLocation: saslCerts.Cert, SSLKeyLocation: saslCerts.Key,
			}}
		})
	ctx := proctest.Context(t, 60*time.Second)

	plain := testnode.Client(t, n.KafkaAddr())
	altered, err := kadm.NewClient(plain).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil || altered["bob"].Err != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, altered)
	}

	ask := func(addr string, opts ...kgo.Opt) error {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	bob := kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())
	saslAddr, sslAddr := n.ListenerAddr("SASL_SSL"), n.ListenerAddr("SSL")

	if err := ask(saslAddr, bob, kgo.DialTLSConfig(&tls.Config{RootCAs: other.Pool()})); err != nil {
		t.Fatalf("a password-only client over SASL_SSL (ssl_client_auth none on that listener): %v", err)
	}
	if err := ask(saslAddr, bob, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err == nil {
		t.Fatal("the SASL_SSL listener served the node's certificate, not its own")
	}
	app := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.ClientTLS(t, "app", "payments")}}
	if err := ask(sslAddr, kgo.DialTLSConfig(app)); err != nil {
		t.Fatalf("an mTLS client over SSL: %v", err)
	}
	if err := ask(sslAddr, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err == nil {
		t.Fatal("the SSL listener (ssl_client_auth required) served a client without a certificate")
	}
}

// TestAnonymousSuperUserWarns: super_users naming User:ANONYMOUS on a node
// whose PLAINTEXT listener and SSL listener with ssl_client_auth requested
// serve clients without credentials as User:ANONYMOUS makes every such
// client a super user; the node says so at start, naming those listeners
// and not the one that requires certificates.
func TestAnonymousSuperUserWarns(t *testing.T) {
	ca := testcerts.NewCA(t, "shale-test-ca")
	logs := &testlog.Buffer{}
	cfg := testnode.Config(t.TempDir(), testnode.WithListeners("PLAINTEXT", "SSL", "MTLS"),
		testnode.WithTLS(ca.ServerFiles(t, "broker-0"), "requested"), func(c *config.Broker) {
			c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL"
			c.ListenerName = map[string]config.ListenerSettings{"MTLS": {SSLClientAuth: "required"}}
			c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:admin;User:ANONYMOUS"
		})
	testnode.StartConfig(t, proctest.Context(t, 60*time.Second), cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if !strings.Contains(logs.String(), "super_users names User:ANONYMOUS") || !strings.Contains(logs.String(), "listeners=PLAINTEXT,SSL\n") {
		t.Fatalf("no warning naming the listeners PLAINTEXT,SSL:\n%s", grepLines(logs.String(), "ANONYMOUS"))
	}
}
