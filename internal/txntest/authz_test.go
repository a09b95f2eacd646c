package txntest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestAddPartitionsToTxnV4NeedsOnlyClusterAction: AddPartitionsToTxn v4+
// is sent by partition leaders (KIP-890), and Kafka authorizes it with
// ClusterAction on the cluster alone: the transactional id and the topics
// were authorized for the client on its Produce. A broker principal that
// has ClusterAction but no Write on the id or the topic (not a super
// user) verifies the partition; one without ClusterAction is refused
// CLUSTER_AUTHORIZATION_FAILED, and below v4 (from the producer) Write on
// the id is still needed. Before the fix v4 also checked Write on the id
// and the topics against the calling broker's principal: the verification
// answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and with such an
// inter-broker principal every transactional produce failed.
func TestAddPartitionsToTxnV4NeedsOnlyClusterAction(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("broker:broker-secret\nother:other-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms, c.SASLPlainUsersFile = "PLAIN", users
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:ANONYMOUS"
	})
	ctx := proctest.Context(t, 60*time.Second)
	super := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(kversion.V3_9_0()))
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.ListenerAddr("SASL_PLAINTEXT")),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	acls := kadm.NewACLs().Allow("User:broker").AllowHosts().Clusters().Operations(kadm.OpClusterAction)
	res, err := kadm.NewClient(super).CreateACLs(ctx, acls)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	createTopic(t, ctx, super, "az", 1, 1)
	const id = "az-txn"
	pid, epoch := newProducer(t, ctx, super, id)
	if code := addPartitions(t, ctx, super, id, pid, epoch, "az", 0); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}

	verify := func(cl *kgo.Client) (top, part int16) {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "az", []int32{0}
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		// Straight to the node, as a leader sends it: the client's own
		// routing would look the coordinator up with FindCoordinator,
		// which needs Describe on the id.
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		kr, err := cl.Broker(0).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kr.(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, 0
		}
		if len(resp.Transactions) != 1 || len(resp.Transactions[0].Topics) != 1 || len(resp.Transactions[0].Topics[0].Partitions) != 1 {
			t.Fatalf("AddPartitionsToTxn v4 answer %+v", resp)
		}
		return 0, resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
	}
	if top, part := verify(as("broker")); top != 0 || part != 0 {
		t.Fatalf("v4 verification by a ClusterAction principal: %v / %v, want success", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	if top, _ := verify(as("other")); top != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("v4 verification without ClusterAction: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(top))
	}
	// Below v4, the producer's own add still needs Write on the id.
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "az", []int32{0}
	req.Topics = append(req.Topics, rt)
	v3 := as("broker", kgo.MaxVersions(kversion.V3_5_0())) // AddPartitionsToTxn v3
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, v3); err != nil {
		t.Fatal(err)
	}
	kr, err := v3.Broker(0).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := kr.(*kmsg.AddPartitionsToTxnResponse); len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
		r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("v3 add without Write on the id: %+v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", r)
	}
}
