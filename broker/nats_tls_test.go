package broker_test

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testnode"
)

// TestNodeOnNATSOverMutualTLS: a node whose control plane is an external
// NATS server that requires TLS and client certificates connects with
// nats_tls_ca, nats_tls_cert and nats_tls_key and serves (a topic is
// created and written); without its client certificate it does not start.
func TestNodeOnNATSOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "nats-ca")
	srvCert, srvKey := ca.Server(t, "nats")
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "js"),
		NoLog: true, NoSigs: true, TLS: true, TLSVerify: true, TLSTimeout: 5,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, ClientCAs: ca.Pool(),
			ClientAuth: tls.RequireAndVerifyClientCert}})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	addr := ns.Addr().String()
	clientCert, clientKey := ca.Client(t, "shale-node", "")
	caFile := testcerts.Write(t, dir, "ca.pem", ca.CertPEM)
	cfgOf := func(name string, withCert bool) config.Broker {
		c := testnode.Config(filepath.Join(dir, name), func(c *config.Broker) {
			c.NATS, c.NATSTLSCA = "tls://"+addr, caFile
			if withCert {
				c.NATSTLSCert = testcerts.Write(t, dir, "client.crt", clientCert)
				c.NATSTLSKey = testcerts.Write(t, dir, "client.key", clientKey)
			}
		})
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := proctest.Context(t, 60*time.Second)

	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	if n, err := broker.Start(sctx, cfgOf("nocert", false), testnode.Logger()); err == nil {
		n.Close(ctx)
		cancel()
		t.Fatal("a node without its client certificate started on a NATS server that requires one")
	}
	cancel()

	n, err := broker.Start(ctx, cfgOf("node", true), testnode.Logger())
	if err != nil {
		t.Fatal("node over NATS mTLS: ", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(cctx)
	})
	cl := testnode.Client(t, n.KafkaAddr())
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "over-tls"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
}
