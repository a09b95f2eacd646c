// Package interbroker is a node's client side towards the other nodes: the
// one Dialer that every node-to-node Kafka connection goes through (the
// replica fetchers' Fetch connections and their kgo clients, the
// transaction marker sender and the transaction verifier). It speaks the
// security protocol of the inter-broker listener (Kafka's
// inter.broker.listener.name): plaintext, TLS verified against the
// configured CA (with the node's own certificate for mTLS), and SASL
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with the node's own credentials.
//
// It sits beside the other infra adapters and imports no server package:
// its TLS files reload through infra/tlsreload, as the node's listeners do.
package interbroker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/infra/tlsreload"
)

// Errors of Dial and DialContext, wrapped with the cause.
var (
	// ErrTLS: the TLS handshake with the peer failed (an untrusted or
	// misnamed certificate, a refused client certificate).
	ErrTLS = errors.New("inter-broker TLS handshake failed")
	// ErrAuthentication: the peer refused this node's SASL credentials
	// (SASL_AUTHENTICATION_FAILED) or mechanism.
	ErrAuthentication = errors.New("inter-broker SASL authentication failed")
	// ErrConfig: the settings cannot make a dialer.
	ErrConfig = errors.New("inter-broker: invalid configuration")
)

// SASL mechanism names, as in sasl.enabled.mechanisms.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Config is how a node dials its peers.
type Config struct {
	// TLS, when set, makes every connection start with a TLS handshake:
	// the node's own certificate (reloaded when its files change) is its
	// client certificate, and the peer's certificate must chain to RootCAs,
	// or to the reloader's CA file when RootCAs is nil, or to the system's
	// roots when there is neither. Nil dials plaintext.
	TLS     *tlsreload.Reloader
	RootCAs *x509.CertPool
	// Mechanism is the SASL mechanism (sasl.mechanism.inter.broker.protocol);
	// empty authenticates with none. Username and Password are this node's
	// credentials for it.
	Mechanism          string
	Username, Password string
	// DialTimeout bounds the TCP connect and the TLS handshake; 0 is 10s.
	DialTimeout time.Duration
}

// Dialer dials other nodes. Safe for concurrent use; the zero value is
// not usable (New).
type Dialer struct {
	cfg  Config
	mech sasl.Mechanism // nil without SASL
}

// New checks cfg and returns its dialer.
func New(cfg Config) (*Dialer, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	d := &Dialer{cfg: cfg}
	switch cfg.Mechanism {
	case "":
		return d, nil
	case MechanismPlain:
		d.mech = plain.Auth{User: cfg.Username, Pass: cfg.Password}.AsMechanism()
	case MechanismSCRAMSHA256:
		d.mech = scram.Auth{User: cfg.Username, Pass: cfg.Password}.AsSha256Mechanism()
	case MechanismSCRAMSHA512:
		d.mech = scram.Auth{User: cfg.Username, Pass: cfg.Password}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("%w: SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", ErrConfig, cfg.Mechanism)
	}
	if cfg.Username == "" || cfg.Password == "" {
		return nil, fmt.Errorf("%w: SASL mechanism %s without a username and password", ErrConfig, cfg.Mechanism)
	}
	return d, nil
}

// Plaintext is the dialer of a PLAINTEXT inter-broker listener (tests,
// and code that needs a dialer before the settings are known).
func Plaintext() *Dialer {
	d, _ := New(Config{})
	return d
}

// DialContext connects to addr (host:port) and completes the TLS handshake
// when the dialer has TLS; it does not authenticate (KgoOpts hands SASL to
// kgo, Dial does it itself). A failed handshake is ErrTLS.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.DialTimeout)
	defer cancel()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil || d.cfg.TLS == nil {
		return nc, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		nc.Close()
		return nil, err
	}
	tc := tls.Client(nc, d.cfg.TLS.ClientConfig(host, d.cfg.RootCAs))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w with %s: %w", ErrTLS, addr, err)
	}
	return tc, nil
}

// KgoOpts are the kgo options of a client that talks to other nodes: its
// connections go through DialContext, and it authenticates with the
// node's credentials (kgo re-authenticates when the peer sets a session
// lifetime, KIP-368).
func (d *Dialer) KgoOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.Dialer(d.DialContext)}
	if d.mech != nil {
		opts = append(opts, kgo.SASL(d.mech))
	}
	return opts
}

// Conn is a connection Dial opened and authenticated.
type Conn struct {
	net.Conn
	// Expires is when the peer ends the SASL session (KIP-368's
	// SessionLifetimeMillis), zero for never: a caller that writes its
	// own requests dials again before then.
	Expires time.Time
}

// Dial connects to addr, completes the TLS handshake and authenticates, for
// a caller that writes Kafka requests itself (the replica fetchers' Fetch
// connections). clientID is the header's client id of the SASL requests.
func (d *Dialer) Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &Conn{Conn: nc}
	if d.mech == nil {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.DialTimeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	start := time.Now()
	lifetime, err := authenticate(ctx, nc, d.mech, d.cfg.Username, addr, clientID)
	stop()
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	if lifetime > 0 {
		// Dial again a little before the peer's end of the session,
		// as kgo does (at least a second, or the login's duration).
		margin := max(time.Second, time.Since(start), lifetime/20)
		c.Expires = start.Add(lifetime - margin)
	}
	return c, nil
}

// Refused reports whether err is a peer's refusal of this node's
// connection (its certificate or its credentials) rather than a peer that
// is down or busy: the TLS handshake failed, or SASL failed, whether in
// Dial or in a kgo client using KgoOpts.
func Refused(err error) bool {
	return err != nil && (errors.Is(err, ErrTLS) || errors.Is(err, ErrAuthentication) ||
		errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState))
}
