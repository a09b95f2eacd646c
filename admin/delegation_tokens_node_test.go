package admin_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func withTokenSecret(key string) testnode.Option {
	return func(c *config.Broker) { c.DelegationTokenSecretKey = key }
}

func saslClient(t *testing.T, addr string, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createToken(ctx context.Context, t *testing.T, cl *kgo.Client, owner string, renewers ...string) *kmsg.CreateDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	if owner != "" {
		typ := "User"
		req.OwnerPrincipalType, req.OwnerPrincipalName = &typ, &owner
	}
	for _, r := range renewers {
		rn := kmsg.NewCreateDelegationTokenRequestRenewer()
		rn.PrincipalType, rn.PrincipalName = "User", r
		req.Renewers = append(req.Renewers, rn)
	}
	req.MaxLifetimeMillis = -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDelegationTokens runs KIP-48's life of a token on a two-node
// cluster with SASL_PLAINTEXT SCRAM: alice creates a token through node
// 1, a client logs in with it through node 2 (and again after node 2
// restarts), produces and consumes as alice, and may not make tokens of its
// own; describe filters by owner, alice renews it, expires it, and the
// login is then refused.
func TestDelegationTokens(t *testing.T) {
	dir := t.TempDir()
	opts := []testnode.Option{testnode.WithListeners("PLAINTEXT", "SASL_PLAINTEXT"), withTokenSecret("a-secret-of-the-cluster")}
	nodes, srv := testnode.StartCluster(t, dir, 2, opts...)
	ctx := proctest.Context(t, 90*time.Second)

	plain := testnode.Client(t, nodes[0].KafkaAddr())
	adm := kadm.NewClient(plain)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pass"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-pass"},
	}); err != nil {
		t.Fatal(err)
	}
	// PLAINTEXT may not ask for tokens (Kafka's allowTokenRequests).
	if r := createToken(ctx, t, plain, ""); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over PLAINTEXT: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	alice := saslClient(t, nodes[0].ListenerAddr("SASL_PLAINTEXT"), scram.Auth{User: "alice", Pass: "alice-pass"}.AsSha256Mechanism())
	tok := createToken(ctx, t, alice, "", "bob")
	if tok.ErrorCode != 0 || tok.TokenID == "" || len(tok.HMAC) != 64 || tok.PrincipalName != "alice" || tok.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("create: %v %+v", kerr.ErrorForCode(tok.ErrorCode), tok)
	}
	if life := tok.MaxTimestamp - tok.IssueTimestamp; life != (7*24*time.Hour).Milliseconds() || tok.ExpiryTimestamp-tok.IssueTimestamp != (24*time.Hour).Milliseconds() {
		t.Fatalf("lifetimes: issue %d expiry %d max %d, want Kafka's defaults 1 day and 7 days", tok.IssueTimestamp, tok.ExpiryTimestamp, tok.MaxTimestamp)
	}
	// Another owner needs CreateTokens on that user; without an authorizer
	// everyone has it, and the answer names the requester.
	other := createToken(ctx, t, alice, "carol")
	if other.ErrorCode != 0 || other.PrincipalName != "carol" || other.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("create for carol: %v %+v", kerr.ErrorForCode(other.ErrorCode), other)
	}

	password := base64.StdEncoding.EncodeToString(tok.HMAC)
	tokenAuth := scram.Auth{User: tok.TokenID, Pass: password, IsToken: true}
	produceConsume := func(addr, topic string) {
		t.Helper()
		cl := saslClient(t, addr, tokenAuth.AsSha512Mechanism(), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
			kgo.FetchMaxWait(200*time.Millisecond))
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("CreateTopic with the token: %v", err)
		}
		for i := range 3 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce with the token: %v", err)
			}
		}
		var got []string
		for len(got) < 3 && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil && ctx.Err() == nil {
				t.Fatalf("fetch with the token: %v", err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if fmt.Sprint(got) != "[0 1 2]" {
			t.Fatalf("consumed %v", got)
		}
		// A token session may not make, renew, expire or describe tokens.
		if r := createToken(ctx, t, cl, ""); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
			t.Fatalf("create with a token: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		d, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, cl)
		if err != nil || d.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
			t.Fatalf("describe with a token: %v %v", err, d)
		}
	}
	produceConsume(nodes[1].ListenerAddr("SASL_PLAINTEXT"), "token-topic")

	// Describe: alice sees her tokens (as owner and as requester of
	// carol's); an owner filter selects by owner, requester or renewer.
	describe := func(cl *kgo.Client, owners ...string) []string {
		t.Helper()
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		if owners != nil {
			req.Owners = []kmsg.DescribeDelegationTokenRequestOwner{}
		}
		for _, o := range owners {
			ow := kmsg.NewDescribeDelegationTokenRequestOwner()
			ow.PrincipalType, ow.PrincipalName = "User", o
			req.Owners = append(req.Owners, ow)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("describe: %v %v", err, resp)
		}
		var ids []string
		for _, d := range resp.TokenDetails {
			ids = append(ids, d.PrincipalName+"/"+d.TokenID)
		}
		return ids
	}
	mine, carols := "alice/"+tok.TokenID, "carol/"+other.TokenID
	if got := describe(alice); fmt.Sprint(got) != fmt.Sprint([]string{mine, carols}) {
		t.Fatalf("alice describes %v", got)
	}
	if got := describe(alice, "carol"); fmt.Sprint(got) != fmt.Sprint([]string{carols}) {
		t.Fatalf("alice describes carol's: %v", got)
	}
	if got := describe(alice, "dave"); len(got) != 0 {
		t.Fatalf("alice describes dave's: %v", got)
	}
	bob := saslClient(t, nodes[1].ListenerAddr("SASL_PLAINTEXT"), scram.Auth{User: "bob", Pass: "bob-pass"}.AsSha512Mechanism())
	// Without an authorizer bob may describe every token, as in Kafka; the
	// owner filter matches renewers too.
	if got := describe(bob, "bob"); fmt.Sprint(got) != fmt.Sprint([]string{mine}) {
		t.Fatalf("bob describes the tokens he renews: %v", got)
	}

	// Renew: by a renewer, capped by the request's period.
	renew := kmsg.NewPtrRenewDelegationTokenRequest()
	renew.HMAC, renew.RenewTimeMillis = tok.HMAC, time.Hour.Milliseconds()
	rr, err := renew.RequestWith(ctx, bob)
	if err != nil || rr.ErrorCode != 0 || rr.ExpiryTimestamp > time.Now().Add(time.Hour).UnixMilli() || rr.ExpiryTimestamp < tok.IssueTimestamp {
		t.Fatalf("renew: %v %+v", err, rr)
	}
	// carol's token: alice requested it but is neither owner nor renewer.
	renew.HMAC = other.HMAC
	if rr, err := renew.RequestWith(ctx, alice); err != nil || rr.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("renew of another's token: %v %+v", err, rr)
	}
	renew.HMAC = []byte("no such token")
	if rr, err := renew.RequestWith(ctx, alice); err != nil || rr.ErrorCode != kerr.DelegationTokenNotFound.Code || rr.ExpiryTimestamp != -1 {
		t.Fatalf("renew of an unknown HMAC: %v %+v", err, rr)
	}

	// The token survives a restart of node 2 (it lives in the control plane).
	closeCtx, closeCancel := context.WithTimeout(ctx, 20*time.Second)
	nodes[1].Close(closeCtx)
	closeCancel()
	restarted := testnode.Start(t, filepath.Join(dir, "node", "b"), append([]testnode.Option{testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(2)}, opts...)...)
	produceConsume(restarted.ListenerAddr("SASL_PLAINTEXT"), "token-topic-2")

	// Expire at once: the login is refused from then on, on every node.
	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC, expire.ExpiryPeriodMillis = tok.HMAC, -1
	if er, err := expire.RequestWith(ctx, alice); err != nil || er.ErrorCode != 0 {
		t.Fatalf("expire: %v %+v", err, er)
	}
	for _, addr := range []string{nodes[0].ListenerAddr("SASL_PLAINTEXT"), restarted.ListenerAddr("SASL_PLAINTEXT")} {
		cl := saslClient(t, addr, tokenAuth.AsSha256Mechanism())
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("login with an expired token on %s: %v, want SASL_AUTHENTICATION_FAILED", addr, err)
		}
	}
	if got := describe(alice); fmt.Sprint(got) != fmt.Sprint([]string{carols}) {
		t.Fatalf("after expiry alice describes %v", got)
	}
	// An expiry period of 0 expires carol's token too (by its owner only;
	// alice is refused), and it can then not be renewed.
	expire.HMAC, expire.ExpiryPeriodMillis = other.HMAC, 0
	if er, err := expire.RequestWith(ctx, alice); err != nil || er.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("expire of another's token: %v %+v", err, er)
	}
}

// TestDelegationTokensDisabled: without delegation_token_secret_key every
// token API answers DELEGATION_TOKEN_AUTH_DISABLED, as Kafka does.
func TestDelegationTokensDisabled(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_PLAINTEXT"))
	ctx := proctest.Context(t, 60*time.Second)
	plain := testnode.Client(t, n.KafkaAddr())
	if _, err := kadm.NewClient(plain).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pass"}}); err != nil {
		t.Fatal(err)
	}
	alice := saslClient(t, n.ListenerAddr("SASL_PLAINTEXT"), scram.Auth{User: "alice", Pass: "alice-pass"}.AsSha256Mechanism())
	if r := createToken(ctx, t, alice, ""); r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	renew := kmsg.NewPtrRenewDelegationTokenRequest()
	renew.HMAC = []byte("x")
	if r, err := renew.RequestWith(ctx, alice); err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("renew: %v %+v", err, r)
	}
	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC = []byte("x")
	if r, err := expire.RequestWith(ctx, alice); err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("expire: %v %+v", err, r)
	}
	if r, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, alice); err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("describe: %v %+v", err, r)
	}
}

// TestDelegationTokenACLs: with the authorizer on, bob creates a token
// owned by alice only with CreateTokens on User:alice, and describes
// alice's tokens only with DescribeTokens on User:alice or Describe on the
// token (KIP-373).
func TestDelegationTokenACLs(t *testing.T) {
	a := testnode.StartACLNode(t)
	ctx := proctest.Context(t, 60*time.Second)
	alice, bob := a.Client(t, "alice"), a.Client(t, "bob")
	mine := createToken(ctx, t, alice, "")
	if mine.ErrorCode != 0 {
		t.Fatalf("alice creates her own token: %v", kerr.ErrorForCode(mine.ErrorCode))
	}
	if r := createToken(ctx, t, bob, "alice"); r.ErrorCode != kerr.DelegationTokenAuthorizationFailed.Code {
		t.Fatalf("bob creates alice's token without CreateTokens: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	count := func(cl *kgo.Client) int {
		resp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("describe: %v %+v", err, resp)
		}
		return len(resp.TokenDetails)
	}
	if n := count(bob); n != 0 {
		t.Fatalf("bob describes %d of alice's tokens without an ACL", n)
	}
	// kadm's builder has no USER resource: store the two bindings raw.
	req := kmsg.NewPtrCreateACLsRequest()
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeUser, "User:alice", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	cr, err := req.RequestWith(ctx, a.Super)
	if err != nil || len(cr.Results) != 2 || cr.Results[0].ErrorCode != 0 || cr.Results[1].ErrorCode != 0 {
		t.Fatalf("CreateAcls on User:alice: %v %+v", err, cr)
	}
	theirs := createToken(ctx, t, bob, "alice")
	if theirs.ErrorCode != 0 || theirs.PrincipalName != "alice" || theirs.TokenRequesterPrincipalName != "bob" {
		t.Fatalf("bob creates alice's token with CreateTokens: %v %+v", kerr.ErrorForCode(theirs.ErrorCode), theirs)
	}
	if n := count(bob); n != 2 {
		t.Fatalf("bob describes %d of alice's tokens with DescribeTokens, want 2", n)
	}
}
