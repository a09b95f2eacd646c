package broker

import (
	"context"
	"fmt"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/kafka"
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
// Kafka: a node that does not list it in super_users warns at start.
func (n *Node) startAuthorizer(ctx context.Context) error {
	if n.cfg.Authorizer != config.AuthorizerStandard {
		return nil
	}
	supers := authz.ParseSuperUsers(n.cfg.SuperUsers)
	n.authz = authz.New(authz.Config{SuperUsers: supers, AllowEveryoneIfNoACLFound: n.cfg.AllowEveryoneIfNoACLFound,
		Logger: n.logger.With("component", "authorizer"),
		OnDenied: func(api string, op authz.Operation, rt authz.ResourceType) {
			n.metrics.AuthorizationDenied(api, op.String(), rt.String())
		}})
	var err error
	if n.acls, err = controlplane.OpenACLs(ctx, n.store, n.authz.SetBindings); err != nil {
		return fmt.Errorf("ACLs: %w", err)
	}
	if ls := n.cfg.ListenerConfigs(); len(ls) > 0 && !ls[0].SASL() && !ls[0].TLS() {
		super := false
		for _, p := range supers {
			super = super || p == kafka.AnonymousPrincipal
		}
		if !super {
			n.logger.Warn("the authorizer is on and the inter-broker listener is PLAINTEXT, whose principal "+
				kafka.AnonymousPrincipal+" is not in super_users: replication and transaction markers between nodes will be refused",
				"listener", ls[0].Name)
		}
	}
	return nil
}
