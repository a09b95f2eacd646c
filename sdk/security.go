package sdk

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms, with Kafka's names (sasl.mechanism).
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
	SASLOAuthBearer = "OAUTHBEARER"
)

// WithTLS dials every broker over TLS with cfg (a SSL or SASL_SSL
// listener). An empty cfg.ServerName is set to the host dialed, so the
// broker's certificate is verified for the address it advertises. The
// client keeps cfg; the caller must not change it afterwards.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithSASL logs in to every broker with the SASL mechanism (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, as Kafka names them), as
// user with password; for OAUTHBEARER password is the token and user is
// ignored. The password appears in no error or log line of the SDK.
// Combine it with WithTLS for SASL_SSL: PLAIN and OAUTHBEARER send their
// secret as it is.
func WithSASL(mechanism, user, password string) Option {
	return func(c *config) { c.sasl = &saslConfig{mechanism: mechanism, user: user, password: password} }
}

// WithSASLToken logs in with a delegation token (KIP-48): SCRAM-SHA-256 or
// SCRAM-SHA-512 with the token id as user, its HMAC (base64) as password,
// and the tokenauth=true extension.
func WithSASLToken(mechanism, tokenID, hmac string) Option {
	return func(c *config) {
		c.sasl = &saslConfig{mechanism: mechanism, user: tokenID, password: hmac, token: true}
	}
}

type saslConfig struct {
	mechanism, user, password string
	token                     bool // a delegation token login: SCRAM with tokenauth=true
}

// mechanism is franz-go's implementation of s, or an error that names the
// mechanism (never the password).
func (s *saslConfig) kgo() (sasl.Mechanism, error) {
	switch strings.ToUpper(s.mechanism) {
	case SASLPlain:
		return plain.Auth{User: s.user, Pass: s.password}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: s.user, Pass: s.password, IsToken: s.token}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: s.user, Pass: s.password, IsToken: s.token}.AsSha512Mechanism(), nil
	case SASLOAuthBearer:
		if s.password == "" {
			return nil, fmt.Errorf("%w: SASL OAUTHBEARER without a token", ErrInvalidOption)
		}
		return oauth.Auth{Token: s.password}.AsMechanism(), nil
	}
	return nil, fmt.Errorf("%w: SASL mechanism %q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", ErrInvalidOption, s.mechanism)
}

// securityOpts are the kgo options of WithTLS and WithSASL.
func (c *config) securityOpts() ([]kgo.Opt, error) {
	var o []kgo.Opt
	if c.tls != nil {
		o = append(o, kgo.DialTLSConfig(c.tls))
	}
	if c.sasl != nil {
		if c.sasl.mechanism != SASLOAuthBearer && c.sasl.user == "" {
			return nil, fmt.Errorf("%w: SASL %s without a user name", ErrInvalidOption, c.sasl.mechanism)
		}
		m, err := c.sasl.kgo()
		if err != nil {
			return nil, err
		}
		o = append(o, kgo.SASL(m))
	}
	return o, nil
}
