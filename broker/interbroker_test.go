package broker_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testnode"
)

// TestSASLInterBrokerUserSeededAndChecked: a node whose inter-broker
// listener is SASL_PLAINTEXT with SCRAM-SHA-512 creates its user's
// credential at start, so that a client can log in as that user on a node
// with no other listener; with the authorizer on and the user not in
// super_users it warns, naming the principal; a node started later with
// another password for the same user says that it does not match.
func TestSASLInterBrokerUserSeededAndChecked(t *testing.T) {
	dir := t.TempDir()
	srv := testnode.StartNATS(t, dir)
	logs := &syncBuffer{}
	cfg := testnode.Config(filepath.Join(dir, "node"), testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(1), func(c *config.Broker) {
		c.Listeners, c.InterBrokerListenerName = "SASL_PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT"
		c.SASLEnabledMechanisms, c.InterBrokerSASLUsername, c.InterBrokerSASLPassword = "SCRAM-SHA-512", "broker", "broker-secret"
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:admin"
	})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 60*time.Second)
	n, err := broker.Start(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(cctx)
	}()
	if !strings.Contains(logs.String(), "created the inter-broker user's SCRAM credential") {
		t.Fatalf("no seeding line:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "principal User:broker is not in super_users") {
		t.Fatalf("no warning naming the SASL inter-broker principal:\n%s", grepLines(logs.String(), "super_users"))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.SASL(scram.Auth{User: "broker", Pass: "broker-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).ListBrokers(ctx); err != nil {
		t.Fatal("login as the seeded inter-broker user: ", err)
	}

	// A second node on the same control plane, with another password.
	logs2 := &syncBuffer{}
	cfg2 := testnode.Config(filepath.Join(dir, "node2"), testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(2), func(c *config.Broker) {
		c.Listeners, c.InterBrokerListenerName = "SASL_PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT"
		c.SASLEnabledMechanisms, c.InterBrokerSASLUsername, c.InterBrokerSASLPassword = "SCRAM-SHA-512", "broker", "another-password"
	})
	if err := cfg2.Validate(); err != nil {
		t.Fatal(err)
	}
	n2, err := broker.Start(ctx, cfg2, slog.New(slog.NewTextHandler(logs2, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n2.Close(cctx)
	}()
	if !strings.Contains(logs2.String(), "the inter-broker password does not match") || strings.Contains(logs2.String(), "created the inter-broker") {
		t.Fatalf("second node with another password:\n%s", grepLines(logs2.String(), "inter-broker"))
	}
	if strings.Contains(logs.String()+logs2.String(), "broker-secret") || strings.Contains(logs2.String(), "another-password") {
		t.Fatal("a password reached the log")
	}
}
