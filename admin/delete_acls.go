package admin

// DeleteAcls (key 31), versions 0-3.
//
//   - v0: the filters' pattern type is LITERAL.
//   - v1 (KIP-290): ResourcePatternType in the filters (ANY, MATCH,
//     LITERAL, PREFIXED) and in the bindings answered.
//   - v2: flexible versions. v3: no change.
//
// Needs Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED per filter). A
// filter with an UNKNOWN element is INVALID_REQUEST; without an authorizer
// the answer is SECURITY_DISABLED. Each filter deletes the bindings it
// matches in this node's view and answers them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleDeleteACLs(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	allowed := h.authz.Authorize(req, acl.OpAlter, acl.Cluster)
	for _, rf := range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f := aclFilter(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		switch {
		case h.acls == nil:
			res.ErrorCode = kerr.SecurityDisabled.Code
		case !allowed:
			res.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		default:
			if err := f.Validate(); err != nil {
				res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, errMessage(err)
				break
			}
			deleted, err := h.acls.Delete(ctx, f)
			if err != nil {
				res.ErrorCode, res.ErrorMessage = aclErrorCode(err), errMessage(err)
			}
			for _, b := range deleted {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
				m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
				m.Principal, m.Host = b.Principal, b.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return kafka.Reply{Response: resp}, nil
}
