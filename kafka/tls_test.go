package kafka

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/tlsreload"
	"github.com/shale-io/shale/internal/testcerts"
)

// tlsServer is a Server with one SSL listener on 127.0.0.1:0 whose
// DescribeCluster handler answers with the connection's listener and
// principal in ClusterID ("SSL|User:CN=...").
type tlsServer struct {
	addr     string
	ca       *testcerts.CA
	certPath string
	keyPath  string
	logs     *logSink
}

func startTLSServer(t *testing.T, auth tlsreload.ClientAuth) *tlsServer {
	t.Helper()
	return startTLSServerTimeout(t, auth, 0)
}

func startTLSServerTimeout(t *testing.T, auth tlsreload.ClientAuth, handshakeTimeout time.Duration) *tlsServer {
	t.Helper()
	return startTLSServerWith(t, auth, handshakeTimeout, nil)
}

func startTLSServerWith(t *testing.T, auth tlsreload.ClientAuth, handshakeTimeout time.Duration, mapper *SSLPrincipalMapper) *tlsServer {
	t.Helper()
	ca := testcerts.NewCA(t, "test-ca")
	certs := ca.ServerFiles(t, "broker-one")
	ts := &tlsServer{ca: ca, logs: &logSink{}, certPath: certs.Cert, keyPath: certs.Key}
	r, err := tlsreload.New(tlsreload.Files{CertFile: certs.Cert, KeyFile: certs.Key, CAFile: certs.CA, ClientAuth: auth}, slog.New(ts.logs))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *Request) (Reply, error) {
		resp := req.Msg.(*kmsg.DescribeClusterRequest).ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ClusterID = req.Conn.Listener + "|" + req.Conn.Principal
		return Reply{Response: resp}, nil
	})
	s := NewServer(ServerConfig{}, reg, slog.New(ts.logs))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	t.Cleanup(serveInBackground(t, s, "ServeListener", func() error {
		return s.ServeListener(ln, Listener{Name: "SSL", TLS: r.ServerConfig(), HandshakeTimeout: handshakeTimeout, PrincipalMapper: mapper})
	}))
	return ts
}

// whoAmI asks the server with franz-go over TLS with cfg and returns the
// listener and principal it saw.
func whoAmI(t *testing.T, addr string, cfg *tls.Config) (string, error) {
	t.Helper()
	return askCluster(t, addr, kgo.DialTLSConfig(cfg))
}

func TestTLSListenerServesFranzGo(t *testing.T) {
	ts := startTLSServer(t, tlsreload.ClientAuthNone)
	got, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	if got != "SSL|User:ANONYMOUS" {
		t.Fatalf("listener|principal = %q, want SSL|User:ANONYMOUS", got)
	}
	// A client that does not trust the CA refuses the broker.
	if _, err := whoAmI(t, ts.addr, &tls.Config{}); err == nil {
		t.Fatal("a client without the CA connected")
	}
}

func TestTLSClientCertificateIsThePrincipal(t *testing.T) {
	ts := startTLSServer(t, tlsreload.ClientAuthRequired)
	cert := ts.ca.ClientTLS(t, "alice", "eng")
	got, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	if got != "SSL|User:CN=alice,O=eng" {
		t.Fatalf("listener|principal = %q, want SSL|User:CN=alice,O=eng", got)
	}
	if _, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool()}); err == nil {
		t.Fatal("ssl.client.auth=required served a client without a certificate")
	}
	// A certificate from another CA is refused too.
	other := testcerts.NewCA(t, "other-ca").ClientTLS(t, "mallory", "")
	if _, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), Certificates: []tls.Certificate{other}}); err == nil {
		t.Fatal("a client certificate of an unknown CA was accepted")
	}
	ts.logs.waitLine(t, "TLS handshake failed")
}

// TestTLSPrincipalMappingRules: with ssl.principal.mapping.rules, the
// principal of an mTLS client is what the first matching rule makes of its
// subject, and a subject no rule maps is refused.
func TestTLSPrincipalMappingRules(t *testing.T) {
	m, err := ParseSSLPrincipalMappingRules(`RULE:^CN=([^,]+),O=eng$/$1/L`)
	if err != nil {
		t.Fatal(err)
	}
	ts := startTLSServerWith(t, tlsreload.ClientAuthRequired, 0, m)
	alice := ts.ca.ClientTLS(t, "Alice", "eng")
	got, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), Certificates: []tls.Certificate{alice}})
	if err != nil || got != "SSL|User:alice" {
		t.Fatalf("listener|principal = %q (%v), want SSL|User:alice", got, err)
	}
	bob := ts.ca.ClientTLS(t, "bob", "ops")
	if got, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), Certificates: []tls.Certificate{bob}}); err == nil {
		t.Fatalf("a subject no rule maps was served as %q", got)
	}
	ts.logs.waitLine(t, "maps to no principal")
}

func TestTLSClientCertificateRequested(t *testing.T) {
	ts := startTLSServer(t, tlsreload.ClientAuthRequested)
	got, err := whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	if got != "SSL|User:ANONYMOUS" {
		t.Fatalf("without a certificate: %q", got)
	}
	cert := ts.ca.ClientTLS(t, "bob", "")
	if got, err = whoAmI(t, ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), Certificates: []tls.Certificate{cert}}); err != nil {
		t.Fatal(err)
	}
	if got != "SSL|User:CN=bob" {
		t.Fatalf("with a certificate: %q", got)
	}
}

func TestTLSRefusesOldVersionsAndPlaintext(t *testing.T) {
	ts := startTLSServer(t, tlsreload.ClientAuthNone)
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), MaxVersion: tls.VersionTLS11})
	if err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	c, err = tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	if v := c.ConnectionState().Version; v != tls.VersionTLS12 {
		t.Fatalf("version %x", v)
	}
	c.Close()
	// A plaintext Kafka client on the TLS port is closed, not served.
	raw := dialRaw(t, ts.addr)
	raw.send(kmsg.NewPtrApiVersionsRequest(), 1)
	raw.expectClosed()
}

// serverCN dials addr and returns the CN of the certificate it presents.
func serverCN(t *testing.T, addr string, ca *testcerts.CA) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestTLSCertificateReloadedWhenTheFilesChange(t *testing.T) {
	ts := startTLSServer(t, tlsreload.ClientAuthNone)
	if cn := serverCN(t, ts.addr, ts.ca); cn != "broker-one" {
		t.Fatalf("CN %q", cn)
	}
	later := time.Now().Add(time.Minute)
	// A half-written rotation (a certificate with the old key) keeps the
	// last good certificate.
	cert2, key2 := ts.ca.Server(t, "broker-two")
	writeStamped(t, ts.certPath, cert2, later)
	if cn := serverCN(t, ts.addr, ts.ca); cn != "broker-one" {
		t.Fatalf("after a mismatched pair: CN %q, want the previous broker-one", cn)
	}
	ts.logs.waitLine(t, "do not load")
	writeStamped(t, ts.keyPath, key2, later)
	if cn := serverCN(t, ts.addr, ts.ca); cn != "broker-two" {
		t.Fatalf("after rotation: CN %q, want broker-two", cn)
	}
	ts.logs.waitLine(t, "TLS certificate reloaded")
}

// writeStamped writes data to path with modification time mod, so that the
// change is seen whatever the file system's timestamp resolution.
func writeStamped(t *testing.T, path string, data []byte, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestAdvertisedAddr(t *testing.T) {
	const ls = "PLAINTEXT://10.0.0.1:9092,SSL://broker.example:9093"
	for _, tc := range []struct {
		listeners, listener string
		host                string
		port                int32
		ok                  bool
	}{
		{ls, "SSL", "broker.example", 9093, true},
		{ls, "PLAINTEXT", "10.0.0.1", 9092, true},
		{ls, "INTERNAL", "", 0, false},
		{"", "SSL", "fallback", 1, true},
		{ls, "", "fallback", 1, true},
	} {
		h, p, ok := AdvertisedAddr(tc.listeners, tc.listener, "fallback", 1)
		if h != tc.host || p != tc.port || ok != tc.ok {
			t.Errorf("AdvertisedAddr(%q, %q) = %q %d %v, want %q %d %v", tc.listeners, tc.listener, h, p, ok, tc.host, tc.port, tc.ok)
		}
	}
}

// TestTLSHandshakeTimeout: a client that connects to a TLS listener and
// sends nothing is closed once the handshake timeout passes.
func TestTLSHandshakeTimeout(t *testing.T) {
	ts := startTLSServerTimeout(t, tlsreload.ClientAuthNone, 300*time.Millisecond)
	nc, err := net.DialTimeout("tcp", ts.addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	nc.SetReadDeadline(time.Now().Add(testTimeout))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the server sent bytes to a client that sent none")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection stayed open for %v", testTimeout)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("closed after %v, before the 300ms handshake timeout", d)
	}
	ts.logs.waitLine(t, "TLS handshake failed")
}
