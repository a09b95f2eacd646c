package broker

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/infra/tlsreload"
	"github.com/shale-io/shale/kafka/sasl"
)

// setUpInterBroker builds n.interBroker, the dialer of every connection to
// another node, for the inter-broker listener's protocol: TLS with the
// node's own certificate files (reloader, shared with its listeners), SASL
// with its own credentials. For a SCRAM mechanism it creates the node's
// credential in the control plane when there is none (Kafka's
// kafka-storage format --add-scram): a cluster whose only listeners are
// SASL has no other way in for its first user.
func (n *Node) setUpInterBroker(ctx context.Context, reloader *tlsreload.Reloader) error {
	ib := n.cfg.InterBrokerListener()
	icfg := interbroker.Config{}
	if ib.TLS() {
		icfg.TLS = reloader
		if n.cfg.InterBrokerSSLCALocation != "" {
			pem, err := os.ReadFile(n.cfg.InterBrokerSSLCALocation)
			if err != nil {
				return fmt.Errorf("%w: inter_broker_ssl_ca_location: %v", config.ErrInvalidConfig, err)
			}
			icfg.RootCAs = x509.NewCertPool()
			if !icfg.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("%w: inter_broker_ssl_ca_location %s holds no certificate", config.ErrInvalidConfig, n.cfg.InterBrokerSSLCALocation)
			}
		}
	}
	if ib.SASL() {
		pass, err := n.cfg.InterBrokerPassword()
		if err != nil {
			return err
		}
		icfg.Mechanism, icfg.Username, icfg.Password = n.cfg.SASLMechanismInterBrokerProtocol, n.cfg.InterBrokerSASLUsername, pass
		if icfg.Mechanism != sasl.Plain {
			if err := n.seedInterBrokerSCRAM(ctx, icfg.Mechanism, icfg.Username, pass); err != nil {
				return err
			}
		}
	}
	d, err := interbroker.New(icfg)
	if err != nil {
		return err
	}
	n.interBroker = d
	return nil
}

// seedInterBrokerSCRAM creates user's SCRAM credential when the control
// plane has none, and logs an error when the one there is for another
// password (every login to the other nodes would then fail).
func (n *Node) seedInterBrokerSCRAM(ctx context.Context, mechanism, user, pass string) error {
	c, err := n.scram.Get(ctx, mechanism, user)
	switch {
	case errors.Is(err, controlplane.ErrNoSCRAMCredential):
		nc, err := sasl.NewCredential(mechanism, user, pass, 0)
		if err != nil {
			return err
		}
		if err := n.scram.Put(ctx, controlplane.SCRAMCredential{User: user, Mechanism: mechanism, Salt: nc.Salt,
			Iterations: nc.Iterations, StoredKey: nc.StoredKey, ServerKey: nc.ServerKey}); err != nil {
			return fmt.Errorf("creating the inter-broker SCRAM credential: %w", err)
		}
		n.logger.Info("created the inter-broker user's SCRAM credential", "user", user, "mechanism", mechanism)
		return nil
	case err != nil:
		return fmt.Errorf("reading the inter-broker SCRAM credential: %w", err)
	}
	want, err := sasl.DeriveCredential(mechanism, user, pass, c.Salt, c.Iterations)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(want.StoredKey, c.StoredKey) != 1 {
		n.logger.Error("the inter-broker password does not match the SCRAM credential of its user in the control plane: the other nodes will refuse this node's replica fetchers and transaction markers",
			"user", user, "mechanism", mechanism)
	}
	return nil
}
