package admin

// DescribeAcls (key 29), versions 0-3.
//
//   - v0: the filter's pattern type is LITERAL.
//   - v1 (KIP-290): ResourcePatternType in the filter and the answer: ANY,
//     MATCH (every binding that applies to the named resource: the literal
//     name, the literal "*" and the prefixes of the name), LITERAL or
//     PREFIXED.
//   - v2: flexible versions. v3: no change.
//
// Needs Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED). A filter
// with an UNKNOWN element is INVALID_REQUEST; without an authorizer the
// answer is SECURITY_DISABLED. The bindings come from this node's view of
// the control plane, grouped by resource pattern.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleDescribeACLs(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := aclFilter(r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
	switch {
	case h.acls == nil:
		resp.ErrorCode = kerr.SecurityDisabled.Code
		return kafka.Reply{Response: resp}, nil
	case !h.authz.Authorize(req, acl.OpDescribe, acl.Cluster):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, errMessage(err)
		return kafka.Reply{Response: resp}, nil
	}
	// Set orders by resource, then pattern: equal patterns are adjacent.
	var last *kmsg.DescribeACLsResponseResource
	for _, b := range h.acls.Set().Select(f) {
		if last == nil || last.ResourceType != kmsg.ACLResourceType(b.ResourceType) || last.ResourceName != b.ResourceName ||
			last.ResourcePatternType != kmsg.ACLResourcePatternType(b.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			resp.Resources = append(resp.Resources, res)
			last = &resp.Resources[len(resp.Resources)-1]
		}
		entry := kmsg.NewDescribeACLsResponseResourceACL()
		entry.Principal, entry.Host = b.Principal, b.Host
		entry.Operation, entry.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		last.ACLs = append(last.ACLs, entry)
	}
	return kafka.Reply{Response: resp}, nil
}

// aclFilter is a request's AclBindingFilter; a null string matches every
// value.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return acl.Filter{ResourceType: acl.ResourceType(rt), ResourceName: deref(name), PatternType: acl.PatternType(pt),
		Principal: deref(principal), Host: deref(host), Operation: acl.Operation(op), Permission: acl.Permission(perm)}
}
