package sdk

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one ACL binding, with Kafka's names: ResourceType TOPIC, GROUP,
// CLUSTER or TRANSACTIONAL_ID; PatternType LITERAL or PREFIXED; Principal
// "User:alice" (User:* for everyone); Host an IP address or "*";
// Operation READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL; Permission
// ALLOW or DENY. Parsing ignores case, '_' and '-' ("cluster-action").
type ACL struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// ACLFilter selects ACLs, Kafka's AclBindingFilter: an empty field
// matches every value, and PatternType MATCH (with a ResourceName) selects
// every ACL that applies to that resource (its literal name, "*", and its
// prefixes).
type ACLFilter ACL

// aclCodes are an ACL's fields as Kafka's codes; empty fields are ANY
// (filters) or the defaults (Host "*", PatternType LITERAL) when create.
type aclCodes struct {
	rt   kmsg.ACLResourceType
	pt   kmsg.ACLResourcePatternType
	op   kmsg.ACLOperation
	perm kmsg.ACLPermissionType
}

func parseACL(a ACL, create bool) (aclCodes, error) {
	var c aclCodes
	var err error
	field := func(s, any string, parse func(string) error) {
		if err != nil {
			return
		}
		if s == "" {
			s = any
		}
		err = parse(s)
	}
	pattern := "ANY"
	if create {
		pattern = "LITERAL"
	}
	field(a.ResourceType, "ANY", func(s string) (e error) { c.rt, e = kmsg.ParseACLResourceType(s); return })
	field(a.PatternType, pattern, func(s string) (e error) { c.pt, e = kmsg.ParseACLResourcePatternType(s); return })
	field(a.Operation, "ANY", func(s string) (e error) { c.op, e = kmsg.ParseACLOperation(s); return })
	field(a.Permission, "ANY", func(s string) (e error) { c.perm, e = kmsg.ParseACLPermissionType(s); return })
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return c, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func resultErr(code int16, msg *string, what string) error {
	if err := kerr.ErrorForCode(code); err != nil {
		if msg != nil && *msg != "" {
			return fmt.Errorf("%s: %w: %s", what, err, *msg)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// CreateACLs stores acls with Kafka's CreateAcls. An empty Host is "*",
// an empty PatternType LITERAL. The first ACL the broker refuses is the
// error (the others may be stored).
func (a *Admin) CreateACLs(ctx context.Context, acls []ACL) error {
	if a.closed.Load() {
		return ErrClosed
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, acl := range acls {
		c, err := parseACL(acl, true)
		if err != nil {
			return err
		}
		if acl.Host == "" {
			acl.Host = "*"
		}
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = c.rt, acl.ResourceName, c.pt
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = acl.Principal, acl.Host, c.op, c.perm
		req.Creations = append(req.Creations, cr)
	}
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return err
	}
	for i, r := range resp.Results {
		if err := resultErr(r.ErrorCode, r.ErrorMessage, fmt.Sprintf("ACL %d", i+1)); err != nil {
			return err
		}
	}
	return nil
}

// ListACLs returns the ACLs f selects (DescribeAcls), grouped by resource.
func (a *Admin) ListACLs(ctx context.Context, f ACLFilter) ([]ACL, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	c, err := parseACL(ACL(f), false)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = c.rt, nullable(f.ResourceName), c.pt
	req.Principal, req.Host, req.Operation, req.PermissionType = nullable(f.Principal), nullable(f.Host), c.op, c.perm
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, err
	}
	if err := resultErr(resp.ErrorCode, resp.ErrorMessage, "describe ACLs"); err != nil {
		return nil, err
	}
	var out []ACL
	for _, r := range resp.Resources {
		for _, b := range r.ACLs {
			out = append(out, ACL{ResourceType: r.ResourceType.String(), ResourceName: r.ResourceName,
				PatternType: r.ResourcePatternType.String(), Principal: b.Principal, Host: b.Host,
				Operation: b.Operation.String(), Permission: b.PermissionType.String()})
		}
	}
	return out, nil
}

// DeleteACLs deletes the ACLs f selects (DeleteAcls) and returns them.
func (a *Admin) DeleteACLs(ctx context.Context, f ACLFilter) ([]ACL, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	c, err := parseACL(ACL(f), false)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourceName, df.ResourcePatternType = c.rt, nullable(f.ResourceName), c.pt
	df.Principal, df.Host, df.Operation, df.PermissionType = nullable(f.Principal), nullable(f.Host), c.op, c.perm
	req.Filters = append(req.Filters, df)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, err
	}
	var out []ACL
	for _, r := range resp.Results {
		if err := resultErr(r.ErrorCode, r.ErrorMessage, "delete ACLs"); err != nil {
			return out, err
		}
		for _, m := range r.MatchingACLs {
			out = append(out, ACL{ResourceType: m.ResourceType.String(), ResourceName: m.ResourceName,
				PatternType: m.ResourcePatternType.String(), Principal: m.Principal, Host: m.Host,
				Operation: m.Operation.String(), Permission: m.PermissionType.String()})
		}
	}
	return out, nil
}
