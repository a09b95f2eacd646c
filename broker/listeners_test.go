package broker_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testnode"
)

// TestSSLListenerWithClientCertificates runs a node with a PLAINTEXT and an
// SSL listener (ssl.client.auth=required): franz-go produces and consumes
// over mTLS, and Metadata tells each client the address of the listener it
// came in on.
func TestSSLListenerWithClientCertificates(t *testing.T) {
	certs := t.TempDir()
	ca := testcerts.NewCA(t, "shale-test-ca")
	cert, key := ca.Server(t, "broker-0")
	certPath := testcerts.Write(t, certs, "broker.crt", cert)
	keyPath := testcerts.Write(t, certs, "broker.key", key)
	caPath := testcerts.Write(t, certs, "ca.crt", ca.CertPEM)
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
		c.SSLCertificateLocation, c.SSLKeyLocation, c.SSLCALocation = certPath, keyPath, caPath
		c.SSLClientAuth = "required"
	})
	sslAddr, plainAddr := n.ListenerAddr("SSL"), n.ListenerAddr("PLAINTEXT")
	if sslAddr == "" || plainAddr == "" || plainAddr != n.KafkaAddr() {
		t.Fatalf("listeners: SSL %q PLAINTEXT %q, inter-broker %q", sslAddr, plainAddr, n.KafkaAddr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

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
	plain, err := kgo.NewClient(kgo.SeedBrokers(plainAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
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
