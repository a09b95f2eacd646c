package sasl_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/infra/tlsreload"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testlog"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

const testTimeout = 20 * time.Second

// credentials is an in-memory credential store of both SCRAM mechanisms.
type credentials map[string]sasl.Credential // mechanism + "/" + user

func (c credentials) lookup(mech string) sasl.CredentialLookup {
	return func(_ context.Context, user string) (sasl.Credential, error) {
		cr, ok := c[mech+"/"+user]
		if !ok {
			return sasl.Credential{}, sasl.ErrUnknownUser
		}
		return cr, nil
	}
}

type saslServer struct {
	addr string
	logs *testlog.Buffer
	ca   *testcerts.CA // set on a TLS server
}

// startSASLServer serves a SASL listener (SASL_SSL when withTLS) offering
// PLAIN (alice:alice-secret) and both SCRAMs (alice:alice-secret for each),
// whose DescribeCluster answers with the principal in ClusterID.
func startSASLServer(t *testing.T, withTLS bool) *saslServer {
	t.Helper()
	creds := credentials{}
	var mechs []kafka.SASLMechanism
	for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		c, err := sasl.NewCredential(m, "alice", "alice-secret", 0)
		if err != nil {
			t.Fatal(err)
		}
		creds[m+"/alice"] = c
		// A delegation token of bob's: id tok-1, HMAC (password) tok-hmac.
		tc, err := sasl.NewCredential(m, "tok-1", "tok-hmac", 0)
		if err != nil {
			t.Fatal(err)
		}
		mech, err := sasl.SCRAMWithTokens(m, creds.lookup(m), func(_ context.Context, id string) (sasl.TokenCredential, error) {
			if id != "tok-1" {
				return sasl.TokenCredential{}, sasl.ErrUnknownUser
			}
			return sasl.TokenCredential{Credential: tc, Owner: "bob", Expiry: time.Now().Add(time.Hour)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		mechs = append(mechs, mech)
	}
	mechs = append(mechs, sasl.PlainMechanism(sasl.PlainUsers{"alice": "alice-secret"}))

	ss := &saslServer{logs: &testlog.Buffer{}}
	l := kafka.Listener{Name: "SASL_PLAINTEXT", SASL: mechs}
	if withTLS {
		ss.ca = testcerts.NewCA(t, "ca")
		certs := ss.ca.ServerFiles(t, "broker")
		r, err := tlsreload.New(tlsreload.Files{CertFile: certs.Cert, KeyFile: certs.Key}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Name, l.TLS = "SASL_SSL", r.ServerConfig()
	}
	reg := kafka.NewRegistry()
	kafka.RegisterSASL(reg)
	reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
		resp := req.Msg.(*kmsg.DescribeClusterRequest).ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ClusterID = req.Conn.Listener + "|" + req.Conn.Principal
		if req.Conn.TokenAuthenticated {
			resp.ClusterID += "|token"
		}
		return kafka.Reply{Response: resp}, nil
	})
	s := kafka.NewServer(kafka.ServerConfig{}, reg, slog.New(slog.NewTextHandler(ss.logs, nil)))
	ss.addr = serve(t, s, l)
	return ss
}

// serve serves l on s at a new local address, returned, until the test
// ends; then it shuts s down and checks that it stopped cleanly.
func serve(t *testing.T, s *kafka.Server, l kafka.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ln, l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, kafka.ErrServerClosed) {
			t.Errorf("ServeListener: %v", err)
		}
	})
	return ln.Addr().String()
}

func (ss *saslServer) whoAmI(t *testing.T, m ksasl.Mechanism) (string, error) {
	t.Helper()
	var opts []kgo.Opt
	if ss.ca != nil {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: ss.ca.Pool()}))
	}
	return whoAmIAt(t, ss.addr, m, opts...)
}

func TestFranzGoAuthenticates(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		ss := startSASLServer(t, withTLS)
		listener := "SASL_PLAINTEXT"
		if withTLS {
			listener = "SASL_SSL"
		}
		for name, m := range map[string]ksasl.Mechanism{
			"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
			"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
			"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		} {
			got, err := ss.whoAmI(t, m)
			if err != nil {
				t.Fatalf("%s %s: %v", listener, name, err)
			}
			if want := listener + "|User:alice"; got != want {
				t.Fatalf("%s %s: listener|principal %q, want %q", listener, name, got, want)
			}
		}
	}
}

// TestSCRAMTokenLogin logs in with a delegation token (KIP-48): the
// tokenauth extension makes the token id the user and its HMAC the
// password, and the session is the owner's, marked token-authenticated. A
// token id without the extension is an unknown user, and a user's
// password with it is refused.
func TestSCRAMTokenLogin(t *testing.T) {
	ss := startSASLServer(t, false)
	for name, m := range map[string]ksasl.Mechanism{
		"SCRAM-SHA-256": scram.Auth{User: "tok-1", Pass: "tok-hmac", IsToken: true}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "tok-1", Pass: "tok-hmac", IsToken: true}.AsSha512Mechanism(),
	} {
		got, err := ss.whoAmI(t, m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := "SASL_PLAINTEXT|User:bob|token"; got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
	}
	for name, m := range map[string]ksasl.Mechanism{
		"token id as a user": scram.Auth{User: "tok-1", Pass: "tok-hmac"}.AsSha256Mechanism(),
		"user's password":    scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}.AsSha256Mechanism(),
		"wrong HMAC":         scram.Auth{User: "tok-1", Pass: "tok-hmaX", IsToken: true}.AsSha512Mechanism(),
	} {
		if got, err := ss.whoAmI(t, m); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %q, %v; want SASL_AUTHENTICATION_FAILED", name, got, err)
		}
	}
}

func TestBadCredentialsFail(t *testing.T) {
	ss := startSASLServer(t, false)
	for name, m := range map[string]ksasl.Mechanism{
		"SCRAM-SHA-256 wrong password": scram.Auth{User: "alice", Pass: "wrong-pass-1"}.AsSha256Mechanism(),
		"SCRAM-SHA-512 wrong password": scram.Auth{User: "alice", Pass: "wrong-pass-2"}.AsSha512Mechanism(),
		"SCRAM-SHA-512 unknown user":   scram.Auth{User: "mallory", Pass: "wrong-pass-3"}.AsSha512Mechanism(),
		"PLAIN wrong password":         plain.Auth{User: "alice", Pass: "wrong-pass-4"}.AsMechanism(),
		"PLAIN other authzid":          plain.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}.AsMechanism(),
	} {
		_, err := ss.whoAmI(t, m)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: err %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	logs := ss.logs.String()
	if !strings.Contains(logs, "SASL authentication failed") {
		t.Fatalf("no failed-authentication line in the log:\n%s", logs)
	}
	if strings.Contains(logs, "wrong-pass") || strings.Contains(logs, "alice-secret") {
		t.Fatalf("a password reached the log:\n%s", logs)
	}
}

// rawConn speaks Kafka's framing by hand, to send what no client sends.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	f  *kmsg.RequestFormatter
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(testTimeout))
	return &rawConn{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))}
}

// roundTrip sends req and decodes the answer into resp; it returns false
// when the connection was closed instead.
func (c *rawConn) roundTrip(req kmsg.Request, resp kmsg.Response) bool {
	c.t.Helper()
	if _, err := c.nc.Write(c.f.AppendRequest(nil, req, 7)); err != nil {
		return false
	}
	var size [4]byte
	if _, err := readFull(c.nc, size[:]); err != nil {
		return false
	}
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	body := make([]byte, n)
	if _, err := readFull(c.nc, body); err != nil {
		c.t.Fatal(err)
	}
	resp.SetVersion(req.GetVersion())
	skip := 4 // correlation id
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		skip++ // empty tag buffer
	}
	if err := resp.ReadFrom(body[skip:]); err != nil {
		c.t.Fatal(err)
	}
	return true
}

func readFull(nc net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := nc.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestOnlyApiVersionsAndSASLBeforeAuthentication(t *testing.T) {
	ss := startSASLServer(t, false)
	c := dial(t, ss.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	if !c.roundTrip(av, kmsg.NewPtrApiVersionsResponse()) {
		t.Fatal("ApiVersions before authentication was not answered")
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if c.roundTrip(md, kmsg.NewPtrMetadataResponse()) {
		t.Fatal("Metadata before authentication was answered")
	}

	// An unknown mechanism is answered with the enabled ones, then closed.
	c = dial(t, ss.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	if !c.roundTrip(hs, hresp) {
		t.Fatal("SaslHandshake was not answered")
	}
	if hresp.ErrorCode != kerr.UnsupportedSaslMechanism.Code ||
		strings.Join(hresp.SupportedMechanisms, ",") != "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN" {
		t.Fatalf("handshake answer %d %v", hresp.ErrorCode, hresp.SupportedMechanisms)
	}
	if c.roundTrip(av, kmsg.NewPtrApiVersionsResponse()) {
		t.Fatal("the connection stayed open after an unsupported mechanism")
	}

	// A bad PLAIN password: SASL_AUTHENTICATION_FAILED, then closed.
	c = dial(t, ss.addr)
	hs.Mechanism = "PLAIN"
	if !c.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse()) {
		t.Fatal("SaslHandshake PLAIN was not answered")
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00alice\x00nope")
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	if !c.roundTrip(auth, aresp) || aresp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("bad password: answer %d", aresp.ErrorCode)
	}
	if c.roundTrip(av, kmsg.NewPtrApiVersionsResponse()) {
		t.Fatal("the connection stayed open after a failed authentication")
	}
}

// TestSaslHandshakeV0 is the range librdkafka before 2.10 needs (it starts
// SASL only when SaslHandshake v0 is listed, then sends v1): ApiVersions
// lists v0-1 as Kafka does, and a v0 handshake, whose raw SASL tokens
// Shale does not read, is UNSUPPORTED_VERSION and closes the connection.
func TestSaslHandshakeV0(t *testing.T) {
	ss := startSASLServer(t, false)
	c := dial(t, ss.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	avr := kmsg.NewPtrApiVersionsResponse()
	if !c.roundTrip(av, avr) {
		t.Fatal("ApiVersions was not answered")
	}
	var listed bool
	for _, k := range avr.ApiKeys {
		if k.ApiKey == int16(kmsg.SASLHandshake) {
			listed = k.MinVersion == 0 && k.MaxVersion == 1
		}
	}
	if !listed {
		t.Fatalf("ApiVersions does not list SaslHandshake v0-1: %+v", avr.ApiKeys)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	if !c.roundTrip(hs, hresp) {
		t.Fatal("SaslHandshake v0 was not answered")
	}
	if hresp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("SaslHandshake v0: error %d, want UNSUPPORTED_VERSION", hresp.ErrorCode)
	}
	if c.roundTrip(av, kmsg.NewPtrApiVersionsResponse()) {
		t.Fatal("the connection stayed open after a v0 handshake")
	}
}
