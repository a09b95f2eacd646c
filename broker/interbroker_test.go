package broker_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testlog"
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
	logs := &testlog.Buffer{}
	cfg := testnode.Config(filepath.Join(dir, "node"), testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(1), func(c *config.Broker) {
		c.Listeners, c.InterBrokerListenerName = "SASL_PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT"
		c.SASLEnabledMechanisms, c.InterBrokerSASLUsername, c.InterBrokerSASLPassword = "SCRAM-SHA-512", "broker", "broker-secret"
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:admin"
	})
	ctx := proctest.Context(t, 60*time.Second)
	n := testnode.StartConfig(t, ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if !strings.Contains(logs.String(), "created the inter-broker user's SCRAM credential") {
		t.Fatalf("no seeding line:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "principal User:broker is not in super_users") {
		t.Fatalf("no warning naming the SASL inter-broker principal:\n%s", grepLines(logs.String(), "super_users"))
	}
	cl := testnode.Client(t, n.KafkaAddr(), kgo.SASL(scram.Auth{User: "broker", Pass: "broker-secret"}.AsSha512Mechanism()))
	if _, err := kadm.NewClient(cl).ListBrokers(ctx); err != nil {
		t.Fatal("login as the seeded inter-broker user: ", err)
	}

	// A second node on the same control plane, with another password.
	logs2 := &testlog.Buffer{}
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

// TestSSLInterBrokerWithClientCertificates: two nodes whose only listener
// is SSL with client certificates required replicate an RF=2 topic: each
// follower's fetchers present the node's certificate (both key usages) and
// verify the leader's against ssl_ca_location, and the follower joins the
// ISR.
func TestSSLInterBrokerWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "cluster-ca")
	nodes, _ := testnode.StartCluster(t, dir, 2, testnode.WithSession(2*time.Second),
		testnode.WithListeners("SSL"), testnode.WithTLS(ca.NodeFiles(t, "node"), "required"))
	ctx := proctest.Context(t, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].KafkaAddr(), nodes[1].KafkaAddr()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.ClientTLS(t, "test", "")}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := proctest.WaitFor(20*time.Second, func() bool {
		bs, err := adm.ListBrokers(ctx)
		return err == nil && len(bs) == 2
	}); err != nil {
		t.Fatal("two brokers: ", err)
	}
	if r, err := adm.CreateTopic(ctx, 2, 2, nil, "mtls"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "mtls", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The leader of the written partition sees its follower at its log
	// end: the follower fetched the record over mTLS.
	var last string
	if err := proctest.WaitFor(30*time.Second, func() bool {
		for _, n := range nodes {
			st, err := adminapi.Client{Timeout: 5 * time.Second}.ReplicationStatus(ctx, n.AdminAddr(), "mtls")
			if err != nil {
				last = err.Error()
				return false
			}
			for _, p := range st.Partitions {
				if p.Role != adminapi.RoleLeader || p.LogEndOffset == 0 {
					continue
				}
				if len(p.Followers) == 1 && p.Followers[0].LogEndOffset == p.LogEndOffset && p.Followers[0].InISR {
					return true
				}
				last = fmt.Sprintf("partition %d: leader at %d, followers %+v", p.Partition, p.LogEndOffset, p.Followers)
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the follower did not fetch the record: %s", last)
	}
	for _, n := range nodes {
		for _, f := range n.ReplicaFetchers() {
			if f.Error != "" || f.Fetches == 0 {
				t.Fatalf("node fetcher from %d: %d fetches, error %q", f.Leader, f.Fetches, f.Error)
			}
		}
	}
}
