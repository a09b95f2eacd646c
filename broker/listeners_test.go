package broker_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testnode"
)

// TestSSLListenerWithClientCertificates runs a node with a PLAINTEXT and an
// SSL listener (ssl.client.auth=required): franz-go produces and consumes
// over mTLS, and Metadata tells each client the address of the listener it
// came in on.
func TestSSLListenerWithClientCertificates(t *testing.T) {
	ca := testcerts.NewCA(t, "shale-test-ca")
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SSL"),
		testnode.WithTLS(ca.ServerFiles(t, "broker-0"), "required"))
	sslAddr, plainAddr := n.ListenerAddr("SSL"), n.ListenerAddr("PLAINTEXT")
	if sslAddr == "" || plainAddr == "" || plainAddr != n.KafkaAddr() {
		t.Fatalf("listeners: SSL %q PLAINTEXT %q, inter-broker %q", sslAddr, plainAddr, n.KafkaAddr())
	}
	ctx := proctest.Context(t, 30*time.Second)

	clientTLS := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.ClientTLS(t, "app", "payments")}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(clientTLS),
		kgo.DefaultProduceTopic("secure"), kgo.ConsumeTopics("secure"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "secure"); err != nil {
		t.Fatalf("CreateTopic over SSL: %v", err)
	}
	const records = 20
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce over SSL: %v", err)
		}
	}
	var got []string
	for len(got) < records && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil && ctx.Err() == nil {
			t.Fatalf("fetch over SSL: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range records {
		if i >= len(got) || got[i] != fmt.Sprintf("v%d", i) {
			t.Fatalf("consumed %v, want v0..v%d in order", got, records-1)
		}
	}

	// Each listener's clients are told that listener's address.
	brokerPort := func(cl *kgo.Client) int32 {
		t.Helper()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Brokers) != 1 {
			t.Fatalf("Metadata brokers %+v", resp.Brokers)
		}
		return resp.Brokers[0].Port
	}
	if p := brokerPort(cl); p != port(t, sslAddr) {
		t.Fatalf("Metadata over SSL advertises port %d, want the SSL listener's %s", p, sslAddr)
	}
	plain := testnode.Client(t, plainAddr)
	if p := brokerPort(plain); p != port(t, plainAddr) {
		t.Fatalf("Metadata over PLAINTEXT advertises port %d, want %s", p, plainAddr)
	}

	// Without a client certificate the SSL listener serves nothing.
	anon, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, anon); err == nil {
		t.Fatal("the SSL listener answered a client without a certificate")
	}
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// TestSASLSSLListenerWithSCRAM runs a node with a PLAINTEXT listener and a
// SASL_SSL one offering SCRAM-SHA-256 and SCRAM-SHA-512: kadm stores a
// user's credentials with AlterUserScramCredentials (salted by the client,
// kept in the control plane), franz-go logs in with each mechanism and
// produces and consumes over SASL_SSL, a wrong password gets
// SASL_AUTHENTICATION_FAILED, and a deleted credential no longer logs in.
func TestSASLSSLListenerWithSCRAM(t *testing.T) {
	ca := testcerts.NewCA(t, "shale-test-ca")
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_SSL"),
		testnode.WithTLS(ca.ServerFiles(t, "broker-0"), ""))
	saslAddr := n.ListenerAddr("SASL_SSL")
	ctx := proctest.Context(t, 60*time.Second)

	plain := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(plain)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-256"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-512"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for u, a := range altered {
		if a.Err != nil {
			t.Fatalf("AlterUserScramCredentials %s: %v %s", u, a.Err, a.ErrMessage)
		}
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(described["alice"].CredInfos, described["bob"].CredInfos); got != "[SCRAM-SHA-256=iterations=4096] [SCRAM-SHA-512=iterations=8192]" || len(described) != 2 {
		t.Fatalf("DescribeUserScramCredentials: %v", described)
	}

	tlsCfg := &tls.Config{RootCAs: ca.Pool()}
	for _, tc := range []struct {
		user string
		mech sasl.Mechanism
	}{
		{"alice", scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism()},
		{"bob", scram.Auth{User: "bob", Pass: "bob-512"}.AsSha512Mechanism()},
	} {
		topic := "sasl-" + tc.user
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.DialTLSConfig(tlsCfg), kgo.SASL(tc.mech),
			kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("%s: CreateTopic over SASL_SSL: %v", tc.user, err)
		}
		for i := range 5 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", tc.user, i))}).FirstErr(); err != nil {
				t.Fatalf("%s: produce over SASL_SSL: %v", tc.user, err)
			}
		}
		var got []string
		for len(got) < 5 && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil && ctx.Err() == nil {
				t.Fatalf("%s: fetch over SASL_SSL: %v", tc.user, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if fmt.Sprint(got) != fmt.Sprintf("[%[1]s-0 %[1]s-1 %[1]s-2 %[1]s-3 %[1]s-4]", tc.user) {
			t.Fatalf("%s: consumed %v", tc.user, got)
		}
		// Metadata on the SASL_SSL listener advertises that listener.
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil || len(md.Brokers) != 1 || md.Brokers[0].Port != port(t, saslAddr) {
			t.Fatalf("%s: Metadata %v %+v, want the SASL_SSL port of %s", tc.user, err, md, saslAddr)
		}
		cl.Close()
	}

	login := func(m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.DialTLSConfig(tlsCfg), kgo.SASL(m),
			kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := login(scram.Auth{User: "alice", Pass: "not-alice"}.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	// alice's credential is for SCRAM-SHA-256 only.
	if err := login(scram.Auth{User: "alice", Pass: "alice-256"}.AsSha512Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("other mechanism: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := login(scram.Auth{User: "bob", Pass: "bob-512"}.AsSha512Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("deleted credential: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
