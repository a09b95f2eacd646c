package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
)

// startAuthorizer turns the authorizer on when cfg.Authorizer is standard:
// it opens the ACL bucket, whose watch hands the authorizer the whole set
// at each change made on any node. Without it n.authz stays nil, which
// every handler treats as everything allowed.
//
// The nodes' requests to each other (follower fetches, transaction
// markers, the KIP-890 verification) carry the principal of the
// inter-broker listener, as in Kafka, which must be a super user (or hold
// ClusterAction on the cluster and the topic ACLs a follower needs). On a
// PLAINTEXT inter-broker listener that principal is User:ANONYMOUS, as in
// Kafka, on a SASL one User:<inter_broker_sasl_username>: a node that does
// not list it in super_users warns at start.
func (n *Node) startAuthorizer(ctx context.Context) error {
	if n.cfg.Authorizer != config.AuthorizerStandard {
		return nil
	}
	supers := authz.ParseSuperUsers(n.cfg.SuperUsers)
	n.authz = authz.New(authz.Config{SuperUsers: supers, AllowEveryoneIfNoACLFound: n.cfg.AllowEveryoneIfNoACLFound,
		Logger: n.logger.With("component", "authorizer"),
		OnDenied: func(api string, op acl.Operation, rt acl.ResourceType) {
			n.metrics.AuthorizationDenied(api, op.String(), rt.String())
		}})
	var err error
	if n.acls, err = controlplane.OpenACLs(ctx, n.store, n.authz.SetBindings); err != nil {
		return fmt.Errorf("ACLs: %w", err)
	}
	for _, s := range supers {
		if s == "User:ANONYMOUS" {
			if ls := n.cfg.AnonymousListeners(); len(ls) > 0 {
				n.logger.Warn("super_users names User:ANONYMOUS: every client of these listeners, which serve clients without credentials as User:ANONYMOUS, may do everything",
					"listeners", strings.Join(ls, ","))
			}
		}
	}
	// On SSL the principal is the certificate's subject after
	// ssl_principal_mapping_rules: not known here, so not checked.
	if p := n.cfg.InterBrokerPrincipal(); p != "" {
		super := false
		for _, s := range supers {
			super = super || s == p
		}
		if !super {
			n.logger.Warn("the authorizer is on and the inter-broker listener's principal "+p+
				" is not in super_users: replication and transaction markers between nodes will be refused",
				"listener", n.cfg.InterBrokerListener().Name, "principal", p)
		}
	}
	return nil
}
