package testnode

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
)

// ACLNode is a node with the authorizer on: a PLAINTEXT inter-broker
// listener, whose User:ANONYMOUS is a super user (as a Kafka cluster with a
// PLAINTEXT inter-broker listener needs), and a SASL_PLAINTEXT listener
// with PLAIN users admin (a super user), alice and bob.
type ACLNode struct {
	N     *broker.Node
	Super *kgo.Client // over PLAINTEXT: User:ANONYMOUS, a super user
	SASL  string      // the SASL_PLAINTEXT listener's address
}

// StartACLNode starts an ACLNode; opts apply after its own settings.
func StartACLNode(t testing.TB, opts ...Option) *ACLNode {
	t.Helper()
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("admin:admin-secret\nalice:alice-secret\nbob:bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := Start(t, t.TempDir(), append([]Option{func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms, c.SASLPlainUsersFile = "PLAIN", users
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:ANONYMOUS;User:admin"
		c.OffsetsTopicReplicationFactor = 1
		c.DelegationTokenSecretKey = "acl-node-token-secret"
	}}, opts...)...)
	super, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(super.Close)
	return &ACLNode{N: n, Super: super, SASL: n.ListenerAddr("SASL_PLAINTEXT")}
}

// Client is a franz-go client logged in as user over SASL PLAIN.
func (a *ACLNode) Client(t testing.TB, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.SASL),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// AddACLs stores ACLs through the super user and fails on any error.
func (a *ACLNode) AddACLs(t testing.TB, ctx context.Context, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := kadm.NewClient(a.Super).CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateACLs %s: %v %s", r.Principal, r.Err, r.ErrMessage)
		}
	}
}
