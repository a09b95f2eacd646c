package authz

import "github.com/shale-io/shale/kafka"

// supportedOps are the operations each resource type has, Kafka's
// AclEntry.supportedOperations: what KIP-430's authorized-operations
// fields report on.
var supportedOps = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
}

// AuthorizedOperations is KIP-430's bitfield for res: bit op (1<<op) set
// for each operation of res's type that req's principal may do, checked
// quietly. A nil authorizer sets every operation the type has, as Kafka
// without an authorizer answers.
func (a *Authorizer) AuthorizedOperations(req *kafka.Request, res Resource) int32 {
	var bits int32
	for _, op := range supportedOps[res.Type] {
		if a.Permits(req, op, res) {
			bits |= 1 << op
		}
	}
	return bits
}
