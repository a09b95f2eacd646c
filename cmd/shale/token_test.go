package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/sdk"
)

// TestTokenVerbs: alice, logged in with SCRAM, creates a delegation token
// with shale token create, a client logs in with it (the token id as user,
// the HMAC as password, tokenauth=true via the JAAS line), describe lists
// it, renew and expire change it, and after expire the login fails.
func TestTokenVerbs(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_PLAINTEXT"), func(c *config.Broker) {
		c.SASLEnabledMechanisms = "SCRAM-SHA-512"
		c.DelegationTokenSecretKey = "cli-token-secret"
	})
	plain, sasl := n.KafkaAddr(), n.ListenerAddr("SASL_PLAINTEXT")
	cliOK(t, "user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--password-file", writeFile(t, dir, "alice.pass", "alice-secret\n"), "--bootstrap", plain)
	asAlice := func(args ...string) []string {
		return append(args, "--bootstrap", sasl, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret")
	}
	var created []sdk.DelegationToken
	if err := json.Unmarshal([]byte(cliOK(t, asAlice("token", "create", "--renewer", "User:bob", "--output", "json")...)), &created); err != nil || len(created) != 1 {
		t.Fatalf("token create: %v %+v", err, created)
	}
	tok := created[0]
	if tok.Owner != "User:alice" || tok.Requester != "User:alice" || len(tok.Renewers) != 1 || tok.HMAC == "" {
		t.Fatalf("token create: %+v", tok)
	}
	props := writeFile(t, dir, "token.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\""+tok.TokenID+
		"\" password=\""+tok.HMAC+"\" tokenauth=\"true\";\n")
	cliOK(t, "topic", "list", "--bootstrap", sasl, "--command-config", props)
	if out := cliOK(t, asAlice("token", "describe", "--owner", "User:alice")...); !strings.Contains(out, tok.TokenID) || !strings.Contains(out, "User:bob") {
		t.Fatalf("token describe:\n%s", out)
	}
	if out := cliOK(t, asAlice("token", "renew", tok.HMAC, "--renew-time-period", "1h")...); !strings.Contains(out, "token renewed: expires") {
		t.Fatalf("token renew: %s", out)
	}
	cliOK(t, asAlice("token", "expire", tok.HMAC)...)
	if out := cliOK(t, asAlice("token", "describe")...); strings.Contains(out, tok.TokenID) {
		t.Fatalf("token describe after expire:\n%s", out)
	}
	if _, errOut, code := cliRun(t, "topic", "list", "--bootstrap", sasl, "--command-config", props, "--timeout", "5s"); code != 1 || !strings.Contains(errOut, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("login with an expired token: exit %d\n%s", code, errOut)
	}
}
