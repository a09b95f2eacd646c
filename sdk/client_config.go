package sdk

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
)

// ClientConfigKeys are the Kafka client properties ClientConfig reads.
var ClientConfigKeys = []string{
	"security.protocol",
	"sasl.mechanism",
	"sasl.mechanisms", // librdkafka's spelling
	"sasl.username",
	"sasl.password",
	"sasl.jaas.config",
	"sasl.oauthbearer.token.endpoint.url",
	"ssl.ca.location",
	"ssl.truststore.location",
	"ssl.truststore.type",
	"ssl.certificate.location",
	"ssl.key.location",
	"ssl.endpoint.identification.algorithm",
}

// ClientConfig turns Kafka client properties, with the names of Kafka's
// and librdkafka's clients, into WithTLS and WithSASL options:
//
//   - security.protocol: PLAINTEXT (default), SSL, SASL_PLAINTEXT or
//     SASL_SSL (any case);
//   - sasl.mechanism (or sasl.mechanisms): PLAIN, SCRAM-SHA-256,
//     SCRAM-SHA-512 or OAUTHBEARER;
//   - sasl.username and sasl.password, or sasl.jaas.config with Kafka's
//     PlainLoginModule or ScramLoginModule and its username="..." and
//     password="..." (sasl.username and sasl.password win over it), and
//     ScramLoginModule's tokenauth="true" for a delegation token login;
//   - sasl.oauthbearer.token.endpoint.url: file:///path, a file whose
//     content is the OAUTHBEARER token, read now (no other scheme);
//   - ssl.ca.location (or ssl.truststore.location with
//     ssl.truststore.type=PEM): PEM CAs the brokers' certificates must
//     chain to, else the system's roots;
//   - ssl.certificate.location and ssl.key.location: a PEM client
//     certificate and its key (mTLS);
//   - ssl.endpoint.identification.algorithm: https (default: the
//     certificate must name the host dialed) or none (the chain is still
//     verified, the host name is not).
//
// Any other key is an error that names it. A SASL or SSL key whose
// protocol does not use it is an error too, so that a missing
// security.protocol cannot quietly send credentials nowhere. Errors wrap
// ErrInvalidOption and never contain a password or token.
func ClientConfig(props map[string]string) ([]Option, error) {
	known := map[string]bool{}
	for _, k := range ClientConfigKeys {
		known[k] = true
	}
	var keys []string
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			return nil, fmt.Errorf("%w: unknown client property %q (known: %s)", ErrInvalidOption, k, strings.Join(ClientConfigKeys, ", "))
		}
	}
	get := func(k string) string { return strings.TrimSpace(props[k]) }
	has := func(prefix string) string {
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) && k != "ssl.endpoint.identification.algorithm" && get(k) != "" {
				return k
			}
		}
		return ""
	}
	proto := strings.ToUpper(get("security.protocol"))
	var useTLS, useSASL bool
	switch proto {
	case "", "PLAINTEXT":
		proto = "PLAINTEXT"
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("%w: security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", ErrInvalidOption, props["security.protocol"])
	}
	if k := has("sasl."); k != "" && !useSASL {
		return nil, fmt.Errorf("%w: %s is set but security.protocol is %s (want SASL_PLAINTEXT or SASL_SSL)", ErrInvalidOption, k, proto)
	}
	if k := has("ssl."); k != "" && !useTLS {
		return nil, fmt.Errorf("%w: %s is set but security.protocol is %s (want SSL or SASL_SSL)", ErrInvalidOption, k, proto)
	}
	var opts []Option
	if useTLS {
		cfg, err := tlsFromProperties(get)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithTLS(cfg))
	}
	if useSASL {
		s, err := saslFromProperties(get)
		if err != nil {
			return nil, err
		}
		if s.token {
			opts = append(opts, WithSASLToken(s.mechanism, s.user, s.password))
		} else {
			opts = append(opts, WithSASL(s.mechanism, s.user, s.password))
		}
	}
	return opts, nil
}

func tlsFromProperties(get func(string) string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	ca := get("ssl.ca.location")
	if ts := get("ssl.truststore.location"); ts != "" {
		if t := strings.ToUpper(get("ssl.truststore.type")); t != "PEM" {
			return nil, fmt.Errorf("%w: ssl.truststore.type %q: only PEM is read (or use ssl.ca.location)", ErrInvalidOption, get("ssl.truststore.type"))
		}
		if ca != "" && ca != ts {
			return nil, fmt.Errorf("%w: ssl.ca.location and ssl.truststore.location name different files", ErrInvalidOption)
		}
		ca = ts
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%w: ssl.ca.location: %w", ErrInvalidOption, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ssl.ca.location %s holds no PEM certificate", ErrInvalidOption, ca)
		}
	}
	certFile, keyFile := get("ssl.certificate.location"), get("ssl.key.location")
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%w: ssl.certificate.location and ssl.key.location go together", ErrInvalidOption)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: ssl.certificate.location/ssl.key.location: %w", ErrInvalidOption, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch alg := strings.ToLower(get("ssl.endpoint.identification.algorithm")); alg {
	case "https":
	case "none":
		// Verify the chain against the roots, not the host name: what
		// Kafka's clients do with an empty algorithm.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		if alg != "" {
			return nil, fmt.Errorf("%w: ssl.endpoint.identification.algorithm %q: want https or none", ErrInvalidOption, alg)
		}
	}
	return cfg, nil
}

// jaasOption matches key="value" (or key=value) in a sasl.jaas.config.
var jaasOption = regexp.MustCompile(`([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))`)

func saslFromProperties(get func(string) string) (*saslConfig, error) {
	s := &saslConfig{mechanism: strings.ToUpper(get("sasl.mechanism"))}
	if m := strings.ToUpper(get("sasl.mechanisms")); m != "" {
		if s.mechanism != "" && s.mechanism != m {
			return nil, fmt.Errorf("%w: sasl.mechanism %s and sasl.mechanisms %s differ", ErrInvalidOption, s.mechanism, m)
		}
		s.mechanism = m
	}
	if s.mechanism == "" {
		s.mechanism = SASLPlain // Kafka's default sasl.mechanism
	}
	if jaas := get("sasl.jaas.config"); jaas != "" {
		module, _, _ := strings.Cut(jaas, " ")
		module = module[strings.LastIndex(module, ".")+1:]
		switch module {
		case "PlainLoginModule", "ScramLoginModule":
		default:
			return nil, fmt.Errorf("%w: sasl.jaas.config: login module %q: want PlainLoginModule or ScramLoginModule", ErrInvalidOption, module)
		}
		if (module == "PlainLoginModule") != (s.mechanism == SASLPlain) {
			return nil, fmt.Errorf("%w: sasl.jaas.config's %s does not go with sasl.mechanism %s", ErrInvalidOption, module, s.mechanism)
		}
		for _, m := range jaasOption.FindAllStringSubmatch(jaas, -1) {
			v := m[3]
			if m[3] == "" {
				v = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
			}
			switch m[1] {
			case "username":
				s.user = v
			case "password":
				s.password = v
			case "tokenauth": // a delegation token login (KIP-48)
				s.token = strings.EqualFold(v, "true")
			}
		}
	}
	if u := get("sasl.username"); u != "" {
		s.user = u
	}
	if p := get("sasl.password"); p != "" {
		s.password = p
	}
	if tokenURL := get("sasl.oauthbearer.token.endpoint.url"); tokenURL != "" {
		if s.mechanism != SASLOAuthBearer {
			return nil, fmt.Errorf("%w: sasl.oauthbearer.token.endpoint.url needs sasl.mechanism OAUTHBEARER", ErrInvalidOption)
		}
		u, err := url.Parse(tokenURL)
		if err != nil || u.Scheme != "file" || u.Path == "" {
			return nil, fmt.Errorf("%w: sasl.oauthbearer.token.endpoint.url %q: only file:///path is read", ErrInvalidOption, tokenURL)
		}
		tok, err := os.ReadFile(u.Path)
		if err != nil {
			return nil, fmt.Errorf("%w: sasl.oauthbearer.token.endpoint.url: %w", ErrInvalidOption, err)
		}
		if s.password = strings.TrimSpace(string(tok)); s.password == "" {
			return nil, fmt.Errorf("%w: sasl.oauthbearer.token.endpoint.url: %s is empty", ErrInvalidOption, u.Path)
		}
	}
	if _, err := s.kgo(); err != nil {
		return nil, err
	}
	if s.mechanism != SASLOAuthBearer {
		if s.user == "" {
			return nil, fmt.Errorf("%w: SASL %s needs sasl.username (or sasl.jaas.config's username)", ErrInvalidOption, s.mechanism)
		}
		if s.password == "" {
			return nil, fmt.Errorf("%w: SASL %s needs sasl.password (or sasl.jaas.config's password)", ErrInvalidOption, s.mechanism)
		}
	}
	return s, nil
}
