package config

import "fmt"

// validateAdmin checks the admin HTTP listener's TLS and authentication.
func (b *Broker) validateAdmin() error {
	if (b.AdminSSLCertificateLocation == "") != (b.AdminSSLKeyLocation == "") {
		return fmt.Errorf("%w: admin_ssl_certificate_location and admin_ssl_key_location go together", ErrInvalidConfig)
	}
	switch b.AdminSSLClientAuth {
	case "", "none":
	case "requested", "required":
		if !b.AdminTLS() || b.AdminSSLCALocation == "" {
			return fmt.Errorf("%w: admin_ssl_client_auth=%s needs admin_ssl_certificate_location, admin_ssl_key_location and admin_ssl_ca_location",
				ErrInvalidConfig, b.AdminSSLClientAuth)
		}
	default:
		return fmt.Errorf("%w: admin_ssl_client_auth %q: want required, requested or none", ErrInvalidConfig, b.AdminSSLClientAuth)
	}
	return nil
}

// AdminTLS reports whether the admin listener serves HTTPS.
func (b *Broker) AdminTLS() bool { return b.AdminSSLCertificateLocation != "" }

// AdminClientCerts reports whether a verified client certificate
// authenticates an admin request.
func (b *Broker) AdminClientCerts() bool {
	return b.AdminSSLClientAuth == "requested" || b.AdminSSLClientAuth == "required"
}

// AdminAuthenticates reports whether admin requests need credentials.
func (b *Broker) AdminAuthenticates() bool {
	return b.AdminAuthTokensFile != "" || b.AdminClientCerts()
}
