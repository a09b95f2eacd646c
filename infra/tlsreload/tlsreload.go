// Package tlsreload serves TLS configurations built from PEM files and
// rebuilt when the files change on disk, so that a rotated certificate is
// used from the next connection on without a restart: the Kafka listeners,
// the admin listener and the connections between nodes all take theirs
// from here.
package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
)

// ClientAuth is Kafka's ssl.client.auth: whether a TLS listener asks its
// clients for a certificate.
type ClientAuth string

const (
	// ClientAuthNone asks for no client certificate (the default).
	ClientAuthNone ClientAuth = "none"
	// ClientAuthRequested verifies a client certificate when one is sent
	// and accepts clients without one (their principal is User:ANONYMOUS).
	ClientAuthRequested ClientAuth = "requested"
	// ClientAuthRequired refuses the handshake of a client without a
	// certificate signed by the configured CA.
	ClientAuthRequired ClientAuth = "required"
)

// ErrConfig: the TLS files or settings cannot make a server
// configuration.
var ErrConfig = errors.New("tlsreload: invalid TLS configuration")

// Files names the PEM files of a TLS listener. CertFile holds the
// certificate chain (leaf first), KeyFile its private key, CAFile the CA
// certificates that client certificates must chain to (required unless
// ClientAuth is none).
type Files struct {
	CertFile   string
	KeyFile    string
	CAFile     string
	ClientAuth ClientAuth // empty is none
}

// Reloader serves a tls.Config built from Files and rebuilt when one of
// the files changes on disk: at each handshake it compares the files' size
// and modification time with those it loaded, and reloads when any differ,
// so a rotated certificate is used from the next connection on without a
// restart. A reload that fails (a half-written file, a key that does not
// match) keeps the last good configuration and logs, at most once per
// change. Its methods are safe for concurrent use.
type Reloader struct {
	files Files
	log   *slog.Logger

	mu struct {
		sync.Mutex
		cfg     *tls.Config
		stamps  []fileStamp // of the files cfg was built from
		badSeen []fileStamp // of the files whose last reload failed, logged once
	}
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// New loads files once and returns the reloader, or the error
// that makes the files unusable. A nil log discards logs.
func New(files Files, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if files.ClientAuth == "" {
		files.ClientAuth = ClientAuthNone
	}
	switch files.ClientAuth {
	case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
	default:
		return nil, fmt.Errorf("%w: ssl.client.auth %q: want required, requested or none", ErrConfig, files.ClientAuth)
	}
	if files.CertFile == "" || files.KeyFile == "" {
		return nil, fmt.Errorf("%w: a certificate file and a key file are needed", ErrConfig)
	}
	if files.ClientAuth != ClientAuthNone && files.CAFile == "" {
		return nil, fmt.Errorf("%w: ssl.client.auth=%s needs a CA file", ErrConfig, files.ClientAuth)
	}
	r := &Reloader{files: files, log: log}
	stamps, err := r.stat()
	if err != nil {
		return nil, err
	}
	cfg, err := r.load()
	if err != nil {
		return nil, err
	}
	r.mu.cfg, r.mu.stamps = cfg, stamps
	return r, nil
}

// ServerConfig returns the configuration for a listener: its
// GetConfigForClient hands each handshake the current files' configuration.
// TLS 1.2 is the lowest version accepted.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.current(), nil
		},
	}
}

// ClientConfig returns a configuration for dialing another node with the
// files as they are now (reloaded when they changed): the certificate is
// presented when the server asks for one and the leaf allows client
// authentication (its extended key usages name clientAuth, or none), and
// the server's certificate must chain to roots, or to the CA file when
// roots is nil, or to the system's roots when there is neither; serverName
// is the host name (or IP address) it must name. A new configuration each
// call: the caller may modify it.
func (r *Reloader) ClientConfig(serverName string, roots *x509.CertPool) *tls.Config {
	cur := r.current()
	if roots == nil {
		roots = cur.ClientCAs
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, RootCAs: roots, CipherSuites: cur.CipherSuites}
	if len(cur.Certificates) > 0 && clientAuthUsable(cur.Certificates[0]) {
		cfg.Certificates = cur.Certificates[:1]
	}
	return cfg
}

// clientAuthUsable reports whether a server verifying client certificates
// (Go's, Java's) accepts c's leaf as one.
func clientAuthUsable(c tls.Certificate) bool {
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return false
		}
	}
	if leaf == nil || len(leaf.ExtKeyUsage) == 0 {
		return leaf != nil
	}
	return slices.ContainsFunc(leaf.ExtKeyUsage, func(u x509.ExtKeyUsage) bool {
		return u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny
	})
}

// current returns the configuration of the files as they are now, reloading
// them when they changed since the last load.
func (r *Reloader) current() *tls.Config {
	stamps, err := r.stat()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || equalStamps(stamps, r.mu.stamps) || equalStamps(stamps, r.mu.badSeen) {
		return r.mu.cfg
	}
	cfg, err := r.load()
	if err != nil {
		r.mu.badSeen = stamps
		r.log.Warn("TLS files changed but do not load; keeping the previous certificate", "cert", r.files.CertFile, "err", err)
		return r.mu.cfg
	}
	r.mu.cfg, r.mu.stamps, r.mu.badSeen = cfg, stamps, nil
	r.log.Info("TLS certificate reloaded", "cert", r.files.CertFile)
	return cfg
}

func (r *Reloader) paths() []string {
	p := []string{r.files.CertFile, r.files.KeyFile}
	if r.files.CAFile != "" {
		p = append(p, r.files.CAFile)
	}
	return p
}

func (r *Reloader) stat() ([]fileStamp, error) {
	var out []fileStamp
	for _, p := range r.paths() {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		out = append(out, fileStamp{size: fi.Size(), mod: fi.ModTime()})
	}
	return out, nil
}

func equalStamps(a, b []fileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].size != b[i].size || !a[i].mod.Equal(b[i].mod) {
			return false
		}
	}
	return true
}

// load builds the configuration from the files.
func (r *Reloader) load() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// TLS 1.2 suites: forward-secret AEADs only (TLS 1.3's are fixed).
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
	if r.files.CAFile != "" {
		pem, err := os.ReadFile(r.files.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: no certificate in %s", ErrConfig, r.files.CAFile)
		}
		cfg.ClientCAs = pool
	}
	switch r.files.ClientAuth {
	case ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
