package admin

// CreateAcls (key 30), versions 0-3.
//
//   - v0: literal resource names only (the pattern type is LITERAL).
//   - v1 (KIP-290): ResourcePatternType, LITERAL or PREFIXED.
//   - v2: flexible versions. v3: no change.
//
// Needs Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED per creation).
// Each creation is validated as Kafka does (INVALID_REQUEST: an ANY or
// MATCH element, an empty name, a principal without its type, a cluster
// resource other than kafka-cluster); a valid one is stored in the
// control plane, where every node's authorizer picks it up. Without an
// authorizer the answer is SECURITY_DISABLED.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) registerACLAPIs(reg *kafka.Registry) {
	reg.Register(kmsg.CreateACLs, 0, 3, h.handleCreateACLs)
	reg.Register(kmsg.DescribeACLs, 0, 3, h.handleDescribeACLs)
	reg.Register(kmsg.DeleteACLs, 0, 3, h.handleDeleteACLs)
}

func (h *Handlers) handleCreateACLs(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	allowed := h.authz.Authorize(req, acl.OpAlter, acl.Cluster)
	for _, c := range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		b := acl.Binding{ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: acl.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)}
		var err error
		switch {
		case h.acls == nil:
			res.ErrorCode = kerr.SecurityDisabled.Code
		case !allowed:
			res.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		default:
			err = h.acls.Create(ctx, b)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = aclErrorCode(err), errMessage(err)
		}
		resp.Results = append(resp.Results, res)
	}
	return kafka.Reply{Response: resp}, nil
}

// aclErrorCode is INVALID_REQUEST for an invalid binding or filter, else
// the node's table.
func aclErrorCode(err error) int16 {
	if errors.Is(err, acl.ErrInvalidBinding) {
		return kerr.InvalidRequest.Code
	}
	return adminErrorCode(err)
}
