package interbroker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/infra/tlsreload"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

const testTimeout = 20 * time.Second

// peer is a Kafka server with one listener, as another node's
// inter-broker listener: its DescribeCluster answers the connection's
// principal in ClusterID.
type peer struct {
	addr string
	ca   *testcerts.CA
}

// startPeer serves a listener with TLS (client certificates as
// clientAuth says) when withTLS, and SCRAM-SHA-512 and PLAIN for
// broker:broker-secret when withSASL.
func startPeer(t *testing.T, withTLS, withSASL bool, clientAuth tlsreload.ClientAuth) *peer {
	t.Helper()
	return startPeerReauth(t, withTLS, withSASL, clientAuth, 0)
}

// startPeerReauth is startPeer with connections.max.reauth.ms (KIP-368).
func startPeerReauth(t *testing.T, withTLS, withSASL bool, clientAuth tlsreload.ClientAuth, maxReauth time.Duration) *peer {
	t.Helper()
	p := &peer{ca: testcerts.NewCA(t, "ca")}
	l := kafka.Listener{Name: "PEER", MaxReauth: maxReauth}
	if withSASL {
		c, err := sasl.NewCredential(sasl.ScramSHA512, "broker", "broker-secret", 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := sasl.SCRAM(sasl.ScramSHA512, func(_ context.Context, user string) (sasl.Credential, error) {
			if user != "broker" {
				return sasl.Credential{}, sasl.ErrUnknownUser
			}
			return c, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		l.SASL = []kafka.SASLMechanism{m, sasl.PlainMechanism(sasl.PlainUsers{"broker": "broker-secret"})}
	}
	if withTLS {
		dir := t.TempDir()
		cert, key := p.ca.Node(t, "peer")
		r, err := tlsreload.New(tlsreload.Files{CertFile: testcerts.Write(t, dir, "c.pem", cert),
			KeyFile: testcerts.Write(t, dir, "k.pem", key), CAFile: testcerts.Write(t, dir, "ca.pem", p.ca.CertPEM),
			ClientAuth: clientAuth}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.TLS = r.ServerConfig()
	}
	reg := kafka.NewRegistry()
	kafka.RegisterSASL(reg)
	reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
		resp := req.Msg.(*kmsg.DescribeClusterRequest).ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ClusterID = req.Conn.Principal
		return kafka.Reply{Response: resp}, nil
	})
	s := kafka.NewServer(kafka.ServerConfig{}, reg, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	go s.ServeListener(ln, l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		s.Shutdown(ctx)
	})
	return p
}

// nodeTLS is a node's own TLS files, as its listeners load them, issued by ca
// (with both key usages when both, else a server-only certificate).
func nodeTLS(t *testing.T, ca *testcerts.CA, both bool) *tlsreload.Reloader {
	t.Helper()
	dir := t.TempDir()
	cert, key := ca.Server(t, "node")
	if both {
		cert, key = ca.Node(t, "node")
	}
	r, err := tlsreload.New(tlsreload.Files{CertFile: testcerts.Write(t, dir, "c.pem", cert),
		KeyFile: testcerts.Write(t, dir, "k.pem", key), CAFile: testcerts.Write(t, dir, "ca.pem", ca.CertPEM)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// principalByKgo asks the peer's DescribeCluster through a kgo client with
// d's options.
func principalByKgo(ctx context.Context, t *testing.T, d *interbroker.Dialer, addr string) (string, error) {
	t.Helper()
	cl, err := kgo.NewClient(append(d.KgoOpts(), kgo.SeedBrokers(addr), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	return resp.ClusterID, nil
}

// principalByDial asks the same on a connection from d.Dial, written by
// hand as the replica fetchers write theirs.
func principalByDial(ctx context.Context, t *testing.T, d *interbroker.Dialer, addr string) (string, error) {
	t.Helper()
	c, err := d.Dial(ctx, addr, "test")
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 0
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 7)); err != nil {
		return "", err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return "", err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return "", err
	}
	// Flexible header: correlation id, then its tagged fields (none).
	if binary.BigEndian.Uint32(body) != 7 || body[4] != 0 {
		t.Fatalf("response header % x", body[:5])
	}
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body[5:]); err != nil {
		t.Fatal(err)
	}
	return resp.ClusterID, nil
}

func TestDialerLogsInOverSASLSSL(t *testing.T) {
	ctx := proctest.Context(t, testTimeout)
	p := startPeer(t, true, true, tlsreload.ClientAuthNone)
	for _, mech := range []string{interbroker.MechanismSCRAMSHA512, interbroker.MechanismPlain} {
		d, err := interbroker.New(interbroker.Config{TLS: nodeTLS(t, p.ca, false), Mechanism: mech, Username: "broker", Password: "broker-secret"})
		if err != nil {
			t.Fatal(err)
		}
		for name, ask := range map[string]func(context.Context, *testing.T, *interbroker.Dialer, string) (string, error){
			"kgo": principalByKgo, "dial": principalByDial} {
			if got, err := ask(ctx, t, d, p.addr); err != nil || got != "User:broker" {
				t.Fatalf("%s %s: principal %q, %v", mech, name, got, err)
			}
		}
	}
}

func TestDialerRefusals(t *testing.T) {
	ctx := proctest.Context(t, testTimeout)
	p := startPeer(t, true, true, tlsreload.ClientAuthNone)
	other := testcerts.NewCA(t, "other-ca")
	for _, tc := range []struct {
		name string
		cfg  interbroker.Config
		want error
		msg  string
	}{
		{"wrong password", interbroker.Config{TLS: nodeTLS(t, p.ca, false), Mechanism: interbroker.MechanismSCRAMSHA512,
			Username: "broker", Password: "wrong"}, interbroker.ErrAuthentication, "SASL_AUTHENTICATION_FAILED"},
		{"unknown user", interbroker.Config{TLS: nodeTLS(t, p.ca, false), Mechanism: interbroker.MechanismSCRAMSHA512,
			Username: "nobody", Password: "broker-secret"}, interbroker.ErrAuthentication, "SASL_AUTHENTICATION_FAILED"},
		{"mechanism not enabled", interbroker.Config{TLS: nodeTLS(t, p.ca, false), Mechanism: interbroker.MechanismSCRAMSHA256,
			Username: "broker", Password: "broker-secret"}, interbroker.ErrAuthentication, "not enabled there"},
		{"untrusted certificate", interbroker.Config{TLS: nodeTLS(t, other, false), Mechanism: interbroker.MechanismSCRAMSHA512,
			Username: "broker", Password: "broker-secret"}, interbroker.ErrTLS, "unknown authority"},
	} {
		d, err := interbroker.New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = principalByDial(ctx, t, d, p.addr)
		if !errors.Is(err, tc.want) || !interbroker.Refused(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: Dial: %v, want %v with %q", tc.name, err, tc.want, tc.msg)
		}
		if _, err := principalByKgo(ctx, t, d, p.addr); !interbroker.Refused(err) {
			t.Fatalf("%s: kgo: %v, want a refusal", tc.name, err)
		}
	}
	if _, err := principalByDial(ctx, t, interbroker.Plaintext(), p.addr); err == nil || interbroker.Refused(err) {
		t.Fatalf("plaintext to a TLS listener: %v, want a failure that is no refusal of credentials", err)
	}
}

// TestDialerClientCertificate: with ssl.client.auth=required the node's
// certificate is its client certificate, and its subject the principal;
// a server-only certificate (no clientAuth usage) is not offered, so the
// handshake fails as a TLS refusal rather than being sent and rejected.
func TestDialerClientCertificate(t *testing.T) {
	ctx := proctest.Context(t, testTimeout)
	p := startPeer(t, true, false, tlsreload.ClientAuthRequired)
	d, err := interbroker.New(interbroker.Config{TLS: nodeTLS(t, p.ca, true)})
	if err != nil {
		t.Fatal(err)
	}
	for name, ask := range map[string]func(context.Context, *testing.T, *interbroker.Dialer, string) (string, error){
		"kgo": principalByKgo, "dial": principalByDial} {
		if got, err := ask(ctx, t, d, p.addr); err != nil || got != "User:CN=node" {
			t.Fatalf("%s: principal %q, %v", name, got, err)
		}
	}
	d, err = interbroker.New(interbroker.Config{TLS: nodeTLS(t, p.ca, false)})
	if err != nil {
		t.Fatal(err)
	}
	// TLS 1.3: the client learns of the server's refusal at its first read.
	if got, err := principalByDial(ctx, t, d, p.addr); err == nil {
		t.Fatalf("a server-only certificate was accepted as a client certificate: principal %q", got)
	}
}

func TestNewRefusesIncompleteSASL(t *testing.T) {
	for _, cfg := range []interbroker.Config{
		{Mechanism: "GSSAPI", Username: "u", Password: "p"},
		{Mechanism: interbroker.MechanismSCRAMSHA256, Username: "u"},
		{Mechanism: interbroker.MechanismPlain, Password: "p"},
	} {
		if _, err := interbroker.New(cfg); !errors.Is(err, interbroker.ErrConfig) {
			t.Fatalf("%+v: %v", cfg, err)
		}
	}
}

// TestDialerSessionLifetime: a peer with connections.max.reauth.ms gives
// the session a lifetime; Dial's Conn expires before it ends, so that the
// replica fetchers log in again on a new connection in time.
func TestDialerSessionLifetime(t *testing.T) {
	ctx := proctest.Context(t, testTimeout)
	const lifetime = 3 * time.Second
	p := startPeerReauth(t, false, true, tlsreload.ClientAuthNone, lifetime)
	d, err := interbroker.New(interbroker.Config{Mechanism: interbroker.MechanismSCRAMSHA512, Username: "broker", Password: "broker-secret"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := d.Dial(ctx, p.addr, "test")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if c.Expires.IsZero() || !c.Expires.After(start) || !c.Expires.Before(start.Add(lifetime)) {
		t.Fatalf("Expires %v after the dial, want within the %v lifetime and before its end", c.Expires.Sub(start), lifetime)
	}
	// Without a lifetime the session never expires.
	q := startPeer(t, false, true, tlsreload.ClientAuthNone)
	c, err = d.Dial(ctx, q.addr, "test")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !c.Expires.IsZero() {
		t.Fatalf("Expires %v without a session lifetime", c.Expires)
	}
}
