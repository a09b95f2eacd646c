package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/shale-io/shale/infra/adminauth"
	"github.com/shale-io/shale/infra/tlsreload"
)

// The admin HTTP listener (admin_listen): HTTPS with the reloading
// certificate code of the Kafka listeners when admin_ssl_* is set, and
// authentication of its own (bearer tokens from a file, client
// certificates) in front of every endpoint (the console's pages included)
// but, when admin_health_unauthenticated is set, the health ones.

// healthPaths are the endpoints admin_health_unauthenticated opens.
var healthPaths = []string{"/healthz", "/readyz"}

// listenAdmin binds admin_listen, with TLS when configured.
func (n *Node) listenAdmin() (net.Listener, error) {
	ln, err := net.Listen("tcp", n.cfg.AdminListen)
	if err != nil {
		return nil, err
	}
	if !n.cfg.AdminTLS() {
		return ln, nil
	}
	r, err := tlsreload.New(tlsreload.Files{CertFile: n.cfg.AdminSSLCertificateLocation, KeyFile: n.cfg.AdminSSLKeyLocation,
		CAFile: n.cfg.AdminSSLCALocation, ClientAuth: tlsreload.ClientAuth(n.cfg.AdminSSLClientAuth)}, n.logger)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	return tls.NewListener(ln, r.ServerConfig()), nil
}

// adminHandler is the admin mux behind the listener's authentication.
func (n *Node) adminHandler() (http.Handler, error) {
	cfg := adminauth.Config{ClientCerts: n.cfg.AdminClientCerts(), Logger: n.logger.With("component", "admin")}
	if n.cfg.AdminAuthTokensFile != "" {
		t, err := adminauth.LoadTokens(n.cfg.AdminAuthTokensFile, cfg.Logger)
		if err != nil {
			return nil, err
		}
		cfg.Tokens = t
		if !n.cfg.AdminTLS() {
			n.logger.Warn("admin: bearer tokens over plain HTTP: anyone on the path can read them; set admin_ssl_certificate_location")
		}
	}
	if n.cfg.AdminHealthUnauthenticated {
		cfg.Open = healthPaths
	}
	return adminauth.Handler(n.adminMux(), cfg), nil
}
