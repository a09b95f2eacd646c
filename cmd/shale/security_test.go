package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testjwt"
	"github.com/shale-io/shale/internal/testnode"
)

// writeFile writes data to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIOverSASLSSL runs the Kafka verbs against a node's SASL_SSL
// listener (SCRAM-SHA-512, the standard authorizer, super user admin) with
// --command-config and -X: admin is created over PLAINTEXT (where
// User:ANONYMOUS is a super user, the bootstrap of a first user), then,
// logged in as admin over SASL_SSL, creates alice, gives her ACLs and a
// topic; alice produces and consumes over SASL_SSL, and is refused a topic
// she has no ACL for. A wrong password exits 1 with Kafka's
// SASL_AUTHENTICATION_FAILED and without the password.
func TestCLIOverSASLSSL(t *testing.T) {
	dir := t.TempDir()
	certs := testcerts.NewCA(t, "shale-test-ca").ServerFiles(t, "broker-0")
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_SSL"), testnode.WithTLS(certs, ""), func(c *config.Broker) {
		c.SASLEnabledMechanisms = "SCRAM-SHA-512"
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:ANONYMOUS;User:admin"
	})
	plain, sasl := n.KafkaAddr(), n.ListenerAddr("SASL_SSL")

	adminPass := writeFile(t, dir, "admin.pass", "admin-secret\n")
	cliOK(t, "user", "create", "admin", "--mechanism", "SCRAM-SHA-512", "--password-file", adminPass, "--bootstrap", plain)

	adminProps := writeFile(t, dir, "admin.properties", "# the operator's login\n"+
		"security.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"+
		"    username=\"admin\" password=\"admin-secret\";\n"+
		"ssl.ca.location="+certs.CA+"\n")
	asAdmin := func(args ...string) []string {
		return append(args, "--bootstrap", sasl, "--command-config", adminProps)
	}
	alicePass := writeFile(t, dir, "alice.pass", "alice-secret\n")
	cliOK(t, asAdmin("user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--password-file", alicePass)...)
	if out := cliOK(t, asAdmin("user", "list")...); !strings.Contains(out, "alice  SCRAM-SHA-512") || !strings.Contains(out, "admin  SCRAM-SHA-512") {
		t.Fatalf("user list over SASL_SSL:\n%s", out)
	}
	cliOK(t, asAdmin("acl", "add", "--principal", "User:alice", "--operation", "Read,Write,Describe", "--topic", "payments")...)
	if out := cliOK(t, asAdmin("acl", "list", "--principal", "User:alice")...); strings.Count(out, "payments") != 3 {
		t.Fatalf("acl list over SASL_SSL:\n%s", out)
	}
	cliOK(t, asAdmin("topic", "create", "payments", "-p", "1")...)
	cliOK(t, asAdmin("topic", "create", "audit", "-p", "1")...)

	// alice: the file names the protocol and the CA, -X her login, the
	// environment nothing (-X wins).
	t.Setenv(saslPasswordEnv, "not-alice")
	aliceProps := writeFile(t, dir, "alice.properties", "security.protocol: SASL_SSL\nssl.ca.location "+certs.CA+"\n")
	asAlice := func(args ...string) []string {
		return append(args, "--bootstrap", sasl, "--command-config", aliceProps,
			"-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret")
	}
	in := writeFile(t, dir, "in.txt", "k1:v1\nk2:v2\n")
	cliOK(t, asAlice("produce", "payments", in, "-K", ":")...)
	if got := cliOK(t, asAlice("consume", "payments", "--until", "end", "-f", `%k=%v `)...); got != "k1=v1 k2=v2 " {
		t.Fatalf("alice consumed %q", got)
	}
	if _, errOut, code := cliRun(t, asAlice("produce", "audit", in)...); code != 1 || !strings.Contains(errOut, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice produced to audit: exit %d, stderr:\n%s", code, errOut)
	}

	// The password from the environment, when no property gives one.
	t.Setenv(saslPasswordEnv, "alice-secret")
	if got := cliOK(t, "consume", "payments", "--until", "end", "-f", `%v `, "--bootstrap", sasl,
		"--command-config", aliceProps, "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=alice"); got != "v1 v2 " {
		t.Fatalf("alice consumed %q with the password from the environment", got)
	}

	// A wrong password: exit 1, Kafka's error, no secret.
	for _, args := range [][]string{
		{"topic", "list", "--bootstrap", sasl, "--command-config", aliceProps, "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=wrong-secret", "--timeout", "5s"},
		{"consume", "payments", "--until", "end", "--bootstrap", sasl, "--command-config", adminProps, "-X", "sasl.password=wrong-secret", "--timeout", "5s"},
	} {
		out, errOut, code := cliRun(t, args...)
		t.Logf("shale %s with a wrong password: %s", strings.Join(args[:2], " "), errOut)
		if code != 1 || !strings.Contains(errOut, "SASL_AUTHENTICATION_FAILED") || strings.Contains(out+errOut, "wrong-secret") {
			t.Errorf("shale %s: exit %d, want 1 and SASL_AUTHENTICATION_FAILED without the password\nstdout:\n%s\nstderr:\n%s",
				strings.Join(args[:2], " "), code, out, errOut)
		}
	}
	// Without SASL settings the SASL_SSL listener does not answer a
	// plain TLS client.
	if _, _, code := cliRun(t, "topic", "list", "--bootstrap", sasl, "-X", "security.protocol=SSL", "-X", "ssl.ca.location="+certs.CA, "--timeout", "3s"); code == 0 {
		t.Error("topic list over SASL_SSL without a login exited 0")
	}
}

// TestCLIOverMTLS runs the Kafka verbs against a node whose only listener
// is SSL with client certificates required: with a client certificate
// (ssl.certificate.location, ssl.key.location) topic create, produce and
// consume work; without one, or trusting another CA, they exit 1.
func TestCLIOverMTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "shale-test-ca")
	certs := ca.NodeFiles(t, "broker-0")
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("SSL"), testnode.WithTLS(certs, "required"))
	addr := n.ListenerAddr("SSL")
	ccert, ckey := ca.Client(t, "app", "payments")
	props := writeFile(t, dir, "app.properties", "security.protocol=SSL\n"+
		"ssl.ca.location="+certs.CA+"\n"+
		"ssl.certificate.location="+testcerts.Write(t, dir, "app.crt", ccert)+"\n"+
		"ssl.key.location="+testcerts.Write(t, dir, "app.key", ckey)+"\n")
	with := func(args ...string) []string { return append(args, "--bootstrap", addr, "--command-config", props) }
	cliOK(t, with("topic", "create", "events", "-p", "1")...)
	in := writeFile(t, dir, "in.txt", "a\nb\n")
	cliOK(t, with("produce", "events", in)...)
	if got := cliOK(t, with("consume", "events", "--until", "end", "-f", `%v `)...); got != "a b " {
		t.Fatalf("consumed %q over mTLS", got)
	}
	other := testcerts.NewCA(t, "other-ca")
	for name, args := range map[string][]string{
		"no client certificate": {"topic", "list", "--bootstrap", addr, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + certs.CA, "--timeout", "3s"},
		"another CA":            {"topic", "list", "--bootstrap", addr, "--command-config", props, "-X", "ssl.ca.location=" + testcerts.Write(t, dir, "other.crt", other.CertPEM), "--timeout", "3s"},
	} {
		if _, errOut, code := cliRun(t, args...); code != 1 {
			t.Errorf("%s: exit %d, want 1 (stderr %s)", name, code, errOut)
		}
	}
}

// TestClientPropertiesErrors: what cannot be a client configuration is a
// usage error (exit 2) that names the key and never shows a password.
func TestClientPropertiesErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-X", "sasl.passwrod=hunter2"}, `unknown client property "sasl.passwrod"`},
		{[]string{"-X", "security.protocol=TLS"}, `security.protocol "TLS"`},
		{[]string{"-X", "sasl.username=bob", "-X", "sasl.password=hunter2"}, "sasl.password is set but security.protocol is PLAINTEXT"},
		{[]string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=GSSAPI", "-X", "sasl.username=u", "-X", "sasl.password=hunter2"}, `SASL mechanism "GSSAPI"`},
		{[]string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.password=hunter2"}, "needs sasl.username"},
		{[]string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + filepath.Join(dir, "missing.crt")}, "ssl.ca.location"},
		{[]string{"-X", "hunter2"}, `-X: "hunter2" is not key=value`},
		{[]string{"--command-config", filepath.Join(dir, "missing.properties")}, "--command-config"},
		{[]string{"--command-config", writeFile(t, dir, "bad.properties", "security.protocol=SASL_SSL\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required password=\"hunter2\";\n")}, "Krb5LoginModule"},
	} {
		args := append([]string{"topic", "list", "--bootstrap", "127.0.0.1:1"}, c.args...)
		out, errOut, code := cliRun(t, args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(out+errOut, "hunter2") && c.want != `-X: "hunter2" is not key=value` {
			t.Errorf("shale %s: exit %d, want 2 and %q without the password\nstderr:\n%s", strings.Join(c.args, " "), code, c.want, errOut)
		}
	}
}

func TestReadProperties(t *testing.T) {
	got, err := readProperties(strings.NewReader("# comment\n! also\n\n  a=1\nb : two words \nc three\nd=x\\\n   y\ne=\\=\\:\\\\\nempty=\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "two words ", "c": "three", "d": "xy", "e": `=:\`, "empty": ""}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestCLIOverOAuthBearer: with a static JWT in a file
// (sasl.oauthbearer.token.endpoint.url=file://...), the Kafka verbs log in
// on a SASL_PLAINTEXT listener offering OAUTHBEARER; an expired token
// exits 1 with SASL_AUTHENTICATION_FAILED.
func TestCLIOverOAuthBearer(t *testing.T) {
	dir := t.TempDir()
	key := testjwt.NewKey(t, "idp-1", "RS256")
	jwks := writeFile(t, dir, "jwks.json", string(testjwt.JWKSOf(key)))
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "OAUTHBEARER"
		c.SASLOAuthBearerJWKSEndpointURL = "file://" + jwks
		c.SASLOAuthBearerExpectedIssuer = "https://idp.example"
		c.SASLOAuthBearerExpectedAudience = "shale"
	})
	addr := n.ListenerAddr("SASL_PLAINTEXT")
	token := func(name string, life time.Duration) string {
		now := time.Now()
		return writeFile(t, dir, name, key.Sign(t, nil, map[string]any{"sub": "app", "iss": "https://idp.example",
			"aud": []string{"shale"}, "iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(life).Unix()})+"\n")
	}
	login := func(tokenFile string, args ...string) []string {
		return append(args, "--bootstrap", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER",
			"-X", "sasl.oauthbearer.token.endpoint.url=file://"+tokenFile, "--timeout", "5s")
	}
	good := token("good.jwt", time.Hour)
	cliOK(t, login(good, "topic", "create", "oauth", "-p", "1")...)
	in := writeFile(t, dir, "in.txt", "x\n")
	cliOK(t, login(good, "produce", "oauth", in)...)
	if got := cliOK(t, login(good, "consume", "oauth", "--until", "end", "-f", `%v `)...); got != "x " {
		t.Fatalf("consumed %q over OAUTHBEARER", got)
	}
	if _, errOut, code := cliRun(t, login(token("expired.jwt", -time.Hour), "topic", "list")...); code != 1 || !strings.Contains(errOut, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("expired token: exit %d, stderr:\n%s", code, errOut)
	}
}
