package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/tlsreload"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

// boundListener is one Kafka listener the node has bound.
type boundListener struct {
	ln  net.Listener
	cfg kafka.Listener
}

// bindListeners binds every Kafka listener of n.cfg, before the node
// registers, so that a port 0 (tests) is advertised as the port bound, and
// loads the TLS files when a listener needs them: each TLS listener's own
// (listener_name) or the node's. The inter-broker listener
// is n.listeners[0] and n.kafkaLn.
func (n *Node) bindListeners(ctx context.Context) error {
	// One reloader per distinct set of TLS files and client auth: the
	// listeners that share the node's settings share one.
	reloaders := map[tlsreload.Files]*tlsreload.Reloader{}
	var interBrokerTLS *tlsreload.Reloader
	var err error
	if n.scram, err = controlplane.OpenSCRAMCredentials(ctx, n.nc, n.cfg.NATSReplicas); err != nil {
		return err
	}
	if n.tokens, err = controlplane.OpenDelegationTokens(ctx, n.nc, n.cfg.NATSReplicas); err != nil {
		return err
	}
	var mechs []kafka.SASLMechanism
	for _, l := range n.cfg.ListenerConfigs() {
		kl := kafka.Listener{Name: l.Name, InterBroker: l.Name == n.cfg.InterBrokerListenerName}
		if l.SASL() {
			kl.MaxReauth = n.cfg.ConnectionsMaxReauth
			if mechs == nil {
				if mechs, err = n.saslMechanisms(); err != nil {
					return err
				}
			}
			kl.SASL = mechs
		}
		if l.TLS() {
			lt := n.cfg.ListenerTLS(l.Name) // listener_name.<name>.ssl_*, else the node's
			files := tlsreload.Files{CertFile: lt.CertFile, KeyFile: lt.KeyFile, CAFile: lt.CAFile, ClientAuth: tlsreload.ClientAuth(lt.ClientAuth)}
			reloader := reloaders[files]
			if reloader == nil {
				if reloader, err = tlsreload.New(files, n.logger); err != nil {
					return fmt.Errorf("listener %s: %w", l.Name, err)
				}
				reloaders[files] = reloader
			}
			if kl.InterBroker {
				interBrokerTLS = reloader // this node's side of it too, as Kafka's inter-broker client
			}
			kl.TLS = reloader.ServerConfig()
			if kl.PrincipalMapper, err = kafka.ParseSSLPrincipalMappingRules(lt.PrincipalMappingRules); err != nil {
				return fmt.Errorf("listener %s: %w", l.Name, err)
			}
		}
		ln, err := net.Listen("tcp", l.Listen)
		if err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		n.listeners = append(n.listeners, boundListener{ln: ln, cfg: kl})
		if h, p, _ := net.SplitHostPort(l.Advertise); p == "0" {
			_, bound, _ := net.SplitHostPort(ln.Addr().String())
			n.cfg.SetListenerAdvertise(l.Name, net.JoinHostPort(h, bound))
		}
	}
	if len(n.listeners) == 0 {
		return fmt.Errorf("%w: no Kafka listener", config.ErrInvalidConfig)
	}
	n.kafkaLn = n.listeners[0].ln
	return n.setUpInterBroker(ctx, interBrokerTLS)
}

// saslMechanisms builds sasl_enabled_mechanisms: PLAIN from its users file,
// SCRAM against the credentials in the control plane.
func (n *Node) saslMechanisms() ([]kafka.SASLMechanism, error) {
	var out []kafka.SASLMechanism
	for _, name := range n.cfg.SASLMechanisms() {
		if name == sasl.OAuthBearer {
			m, err := n.oauthBearer()
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		if name == sasl.Plain {
			users, err := sasl.OpenPlainUsersFile(n.cfg.SASLPlainUsersFile, n.logger)
			if err != nil {
				return nil, err
			}
			out = append(out, sasl.PlainFileMechanism(users))
			continue
		}
		m, err := sasl.SCRAMWithTokens(name, func(ctx context.Context, user string) (sasl.Credential, error) {
			c, err := n.scram.Get(ctx, name, user)
			if errors.Is(err, controlplane.ErrNoSCRAMCredential) {
				return sasl.Credential{}, sasl.ErrUnknownUser
			}
			if err != nil {
				return sasl.Credential{}, err
			}
			return sasl.Credential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
		}, n.tokenLookup(name))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: a SASL listener without sasl_enabled_mechanisms", config.ErrInvalidConfig)
	}
	return out, nil
}

// oauthBearer builds OAUTHBEARER from the sasl_oauthbearer_* settings.
func (n *Node) oauthBearer() (kafka.SASLMechanism, error) {
	src, err := sasl.NewJWKSource(sasl.JWKSConfig{
		URL:          n.cfg.SASLOAuthBearerJWKSEndpointURL,
		Refresh:      n.cfg.SASLOAuthBearerJWKSEndpointRefresh,
		RetryBackoff: n.cfg.SASLOAuthBearerJWKSEndpointRetryBackoff,
		Timeout:      n.cfg.SASLOAuthBearerJWKSEndpointTimeout,
	}, n.logger)
	if err != nil {
		return nil, err
	}
	var aud []string
	for _, a := range strings.Split(n.cfg.SASLOAuthBearerExpectedAudience, ",") {
		if a = strings.TrimSpace(a); a != "" {
			aud = append(aud, a)
		}
	}
	return sasl.OAuthBearerMechanism(sasl.NewJWTValidator(src, sasl.ClaimRules{
		Issuer:    n.cfg.SASLOAuthBearerExpectedIssuer,
		Audience:  aud,
		SubClaim:  n.cfg.SASLOAuthBearerSubClaimName,
		ClockSkew: n.cfg.SASLOAuthBearerClockSkew,
	}, nil)), nil
}

// connectionLimits is max_connections, max_connections_per_ip and its
// overrides for the Kafka server (Validate checked the overrides).
func connectionLimits(cfg *config.Broker) *kafka.ConnectionLimits {
	o, _ := cfg.ConnectionsPerIPOverrides()
	return &kafka.ConnectionLimits{MaxConnections: cfg.MaxConnections, MaxConnectionsPerIP: cfg.MaxConnectionsPerIP, MaxConnectionsPerIPOverrides: o}
}

// failedAuthDelay is connection_failed_authentication_delay for the Kafka
// server, where 0 is the default and negative is off.
func failedAuthDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// serveListeners serves every bound listener until the server shuts down.
func (n *Node) serveListeners() {
	for _, bl := range n.listeners {
		n.goLoop(func() {
			if err := n.server.ServeListener(bl.ln, bl.cfg); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
				n.logger.Error("kafka listener stopped", "listener", bl.cfg.Name, "err", err)
			}
		})
	}
}

// closeListeners closes every bound listener (Serve may not have started).
func (n *Node) closeListeners() {
	for _, bl := range n.listeners {
		bl.ln.Close()
	}
}

// ListenerAddr is the bound address of the Kafka listener named name, or ""
// when the node has none of that name.
func (n *Node) ListenerAddr(name string) string {
	for _, bl := range n.listeners {
		if bl.cfg.Name == name {
			return bl.ln.Addr().String()
		}
	}
	return ""
}
