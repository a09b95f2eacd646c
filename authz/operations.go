package authz

import (
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// supportedOps are the operations each resource type has, Kafka's
// AclEntry.supportedOperations: what KIP-430's authorized-operations
// fields report on.
var supportedOps = map[acl.ResourceType][]acl.Operation{
	acl.ResourceTopic:           {acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDescribe, acl.OpDelete, acl.OpAlter, acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceGroup:           {acl.OpRead, acl.OpDescribe, acl.OpDelete},
	acl.ResourceCluster:         {acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs, acl.OpIdempotentWrite, acl.OpAlter, acl.OpDescribe},
	acl.ResourceTransactionalID: {acl.OpDescribe, acl.OpWrite},
	acl.ResourceDelegationToken: {acl.OpDescribe},
	acl.ResourceUser:            {acl.OpCreateTokens, acl.OpDescribeTokens},
}

// AuthorizedOperations is KIP-430's bitfield for res: bit op (1<<op) set
// for each operation of res's type that req's principal may do, checked
// quietly. A nil authorizer sets every operation the type has, as Kafka
// without an authorizer answers.
func (a *Authorizer) AuthorizedOperations(req *kafka.Request, res acl.Resource) int32 {
	var bits int32
	for _, op := range supportedOps[res.Type] {
		if a.Permits(req, op, res) {
			bits |= 1 << op
		}
	}
	return bits
}
