// Package testcerts makes a test's certificates with crypto/x509: a CA,
// server certificates for 127.0.0.1 and localhost, and client certificates
// for mTLS, as PEM files in the test's directory. Nothing is checked in and
// nothing is fetched.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// CA is a self-signed certificate authority of one test.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM []byte
}

// NewCA makes a CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Shale tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a pool holding the CA, for a client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost with
// subject CN=cn and returns it and its key as PEM.
func (ca *CA) Server(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.issue(t, pkix.Name{CommonName: cn}, x509.ExtKeyUsageServerAuth)
}

// Node issues a broker's certificate, for 127.0.0.1, ::1 and localhost with
// subject CN=cn, usable both to serve and as a client certificate (the
// node dials its peers with it: inter-broker mTLS), and returns it and its
// key as PEM.
func (ca *CA) Node(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.issue(t, pkix.Name{CommonName: cn}, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Client issues a client certificate with subject CN=cn, O=org (org may be
// empty) and returns it and its key as PEM.
func (ca *CA) Client(t testing.TB, cn, org string) (certPEM, keyPEM []byte) {
	t.Helper()
	name := pkix.Name{CommonName: cn}
	if org != "" {
		name.Organization = []string{org}
	}
	return ca.issue(t, name, x509.ExtKeyUsageClientAuth)
}

// ClientTLS is Client as a tls.Certificate for a client's Certificates.
func (ca *CA) ClientTLS(t testing.TB, cn, org string) tls.Certificate {
	t.Helper()
	c, k := ca.Client(t, cn, org)
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// Files are the paths of a certificate, its key and its CA's certificate,
// PEM files in a test's temporary directory.
type Files struct {
	Cert, Key, CA string
}

// ServerFiles issues Server's certificate for cn and writes it, its key
// and the CA's certificate to files in a new temporary directory of t.
func (ca *CA) ServerFiles(t testing.TB, cn string) Files {
	t.Helper()
	cert, key := ca.Server(t, cn)
	return ca.write(t, cert, key)
}

// NodeFiles issues Node's certificate for cn (to serve and to dial peers
// with) and writes it, its key and the CA's certificate to files in a new
// temporary directory of t.
func (ca *CA) NodeFiles(t testing.TB, cn string) Files {
	t.Helper()
	cert, key := ca.Node(t, cn)
	return ca.write(t, cert, key)
}

func (ca *CA) write(t testing.TB, cert, key []byte) Files {
	t.Helper()
	dir := t.TempDir()
	return Files{Cert: Write(t, dir, "cert.pem", cert), Key: Write(t, dir, "key.pem", key), CA: Write(t, dir, "ca.pem", ca.CertPEM)}
}

func (ca *CA) issue(t testing.TB, name pkix.Name, usages ...x509.ExtKeyUsage) ([]byte, []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      name,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	if slices.Contains(usages, x509.ExtKeyUsageServerAuth) {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// Write writes data to dir/name and returns the path.
func Write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
