package loadbench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ShaleOption changes how StartShale runs the node.
type ShaleOption func(*shaleOptions)

type shaleOptions struct {
	saslSSL bool
	args    []string // more `shale serve` flags
}

// WithServeArgs adds flags to the node's `shale serve` command line.
func WithServeArgs(args ...string) ShaleOption {
	return func(o *shaleOptions) { o.args = append(o.args, args...) }
}

// WithSASLSSL gives the node a SASL_SSL listener beside its PLAINTEXT one:
// a certificate of a CA made for the run, SCRAM-SHA-256, and one user
// (Process.SASLSSL).
func WithSASLSSL() ShaleOption { return func(o *shaleOptions) { o.saslSSL = true } }

// SASLSSL is a node's SASL_SSL listener and how a client logs in on it.
type SASLSSL struct {
	Addr           string
	TLS            *tls.Config // trusts the run's CA
	User, Password string      // a SCRAM-SHA-256 user, 4096 iterations
	certs          string      // directory of the broker's certificate and key
}

// ClientOpts are the kgo options of a client of the listener.
func (s *SASLSSL) ClientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.DialTLSConfig(s.TLS.Clone()), kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism())}
}

func newSASLSSL(dir, addr string) (*SASLSSL, error) {
	s := &SASLSSL{Addr: addr, User: "bench", Password: "bench-secret", certs: filepath.Join(dir, "tls")}
	if err := os.MkdirAll(s.certs, 0o700); err != nil {
		return nil, err
	}
	pool, err := writeCerts(s.certs)
	if err != nil {
		return nil, err
	}
	s.TLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return s, nil
}

func (s *SASLSSL) serveArgs(plainAddr string) []string {
	return []string{
		"--listeners", "PLAINTEXT://" + plainAddr + ",SASL_SSL://" + s.Addr,
		"--ssl-certificate-location", filepath.Join(s.certs, "broker.crt"),
		"--ssl-key-location", filepath.Join(s.certs, "broker.key"),
		"--sasl-enabled-mechanisms", "SCRAM-SHA-256",
		// The login flood (StartFlood) measures the SCRAM work a flood can
		// ask of the node: without the failed-authentication delay, which
		// would slow each flooding connection to one login per 100 ms.
		"--connection-failed-authentication-delay", "0",
	}
}

// createUser stores the SCRAM credential through the PLAINTEXT listener.
func (s *SASLSSL) createUser(ctx context.Context, plainAddr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(plainAddr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: s.User, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: s.Password}})
	if err != nil {
		return fmt.Errorf("AlterUserScramCredentials: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("AlterUserScramCredentials %s: %w", r.User, r.Err)
		}
	}
	return nil
}

// writeCerts makes a CA and a broker certificate for 127.0.0.1 (ECDSA
// P-256, as internal/testcerts does) in dir, and returns a pool of the CA.
func writeCerts(dir string) (*x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "bench-broker"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	write := func(name, typ string, b []byte) error {
		return os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600)
	}
	if err := errors.Join(write("broker.crt", "CERTIFICATE", der), write("broker.key", "EC PRIVATE KEY", keyDER)); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, nil
}

// At is srv reached at another address (another listener of the same
// process): the same CPU time.
func At(srv Server, addr string) Server { return at{srv, addr} }

type at struct {
	Server
	addr string
}

func (a at) Addr() string { return a.addr }

// Logins is what a run of connections measured: each a new client that
// connects, logs in (when its options say so) and answers one Metadata.
type Logins struct {
	N         int
	Wall      time.Duration
	ServerCPU time.Duration
}

// PerSec is logins per second of wall time.
func (l Logins) PerSec() float64 {
	if l.Wall <= 0 {
		return 0
	}
	return float64(l.N) / l.Wall.Seconds()
}

// CPUPerLogin is the server's CPU time per login.
func (l Logins) CPUPerLogin() time.Duration {
	if l.N == 0 {
		return 0
	}
	return l.ServerCPU / time.Duration(l.N)
}

// Connect makes n connections to srv, parallel at a time, each a fresh
// kgo client with opts (TLS and SCRAM for a SASL_SSL listener, none for
// PLAINTEXT) asking one Metadata, and measures them.
func Connect(ctx context.Context, srv Server, opts []kgo.Opt, n, parallel int) (Logins, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	cpu0, err := srv.CPUTime()
	if err != nil {
		return Logins{}, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				if err := connectOnce(ctx, srv.Addr(), opts); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu1, err := srv.CPUTime()
	if err != nil {
		return Logins{}, err
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("%w: connections not done within 2m", ErrIncomplete)
	}
	return Logins{N: n, Wall: wall, ServerCPU: cpu1 - cpu0}, firstErr
}

func connectOnce(ctx context.Context, addr string, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	_, err = req.RequestWith(ctx, cl)
	return err
}

// Flood makes failed logins against a SASL_SSL listener from parallel
// goroutines until Stop: each dials TLS, asks for SCRAM-SHA-256 and sends
// a client-first message for a user that does not exist, which the broker
// answers with SASL_AUTHENTICATION_FAILED before it closes the connection.
type Flood struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	failed atomic.Int64 // logins the broker refused
	errs   atomic.Int64 // anything else (a dial that failed)
}

// StartFlood starts the flood against addr with tlsCfg.
func StartFlood(ctx context.Context, addr string, tlsCfg *tls.Config, parallel int) *Flood {
	ctx, cancel := context.WithCancel(ctx)
	f := &Flood{cancel: cancel}
	for range parallel {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for ctx.Err() == nil {
				if badLogin(ctx, addr, tlsCfg) {
					f.failed.Add(1)
				} else if ctx.Err() == nil {
					f.errs.Add(1)
				}
			}
		}()
	}
	return f
}

// Stop ends the flood and returns the refused logins and the other
// outcomes.
func (f *Flood) Stop() (refused, other int64) {
	f.cancel()
	f.wg.Wait()
	return f.failed.Load(), f.errs.Load()
}

// badLogin reports whether one bad login was refused as Kafka refuses one.
func badLogin(ctx context.Context, addr string, tlsCfg *tls.Config) bool {
	d := tls.Dialer{Config: tlsCfg.Clone()}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	if !roundTrip(nc, f, hs, hresp) || hresp.ErrorCode != 0 {
		return false
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("n,,n=nobody,r=floodfloodflood")
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	return roundTrip(nc, f, au, aresp) && aresp.ErrorCode == kerr.SaslAuthenticationFailed.Code
}

func roundTrip(nc net.Conn, f *kmsg.RequestFormatter, req kmsg.Request, resp kmsg.Response) bool {
	if _, err := nc.Write(f.AppendRequest(nil, req, 1)); err != nil {
		return false
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return false
	}
	body := make([]byte, int(size[0])<<24|int(size[1])<<16|int(size[2])<<8|int(size[3]))
	if len(body) < 5 {
		return false
	}
	if _, err := io.ReadFull(nc, body); err != nil {
		return false
	}
	resp.SetVersion(req.GetVersion())
	skip := 4
	if resp.IsFlexible() {
		skip++
	}
	return resp.ReadFrom(body[skip:]) == nil
}

// CreateTopic creates cfg's topic on the node (tolerating one that exists)
// and waits for a leader on every partition.
func (p *Process) CreateTopic(ctx context.Context, cfg Config) error { return createTopic(ctx, p, cfg) }
