package acl

import (
	"errors"
	"fmt"
	"strings"
)

// ResourceType is Kafka's ResourceType, with its wire codes.
type ResourceType int8

// The resource types. Any is a filter's wildcard only.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the name of the one Cluster resource, Kafka's
// "kafka-cluster".
const ClusterName = "kafka-cluster"

// PatternType is Kafka's PatternType: how a binding's resource name
// matches. Any and Match are filters' only.
type PatternType int8

// The pattern types.
const (
	PatternUnknown PatternType = 0
	// PatternAny, in a filter, matches bindings of every pattern type whose
	// name equals the filter's.
	PatternAny PatternType = 1
	// PatternMatch, in a filter, matches the bindings that apply to the
	// filter's resource name: the literal name, the literal "*" and every
	// prefix of it.
	PatternMatch PatternType = 2
	// PatternLiteral names one resource, or every resource of its type
	// with the name "*".
	PatternLiteral PatternType = 3
	// PatternPrefixed names every resource whose name starts with it.
	PatternPrefixed PatternType = 4
)

// Operation is Kafka's AclOperation, with its wire codes.
type Operation int8

// The operations. Any is a filter's wildcard only; All, in a binding,
// stands for every operation.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	// OpCreateTokens on a User resource lets a principal create delegation
	// tokens owned by that user (KIP-373).
	OpCreateTokens Operation = 13
	// OpDescribeTokens on a User resource lets a principal describe the
	// delegation tokens that user owns (KIP-373).
	OpDescribeTokens Operation = 14
)

// Permission is Kafka's AclPermissionType.
type Permission int8

// The permissions. Any is a filter's wildcard only.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

// WildcardPrincipal matches every user principal, Kafka's "User:*".
const WildcardPrincipal = "User:*"

// WildcardHost matches every client address.
const WildcardHost = "*"

// WildcardResource is the literal name that matches every resource of its
// type.
const WildcardResource = "*"

// Resource is one thing a request acts on: a topic, a group, the cluster,
// a transactional id, a delegation token or a user, by name.
type Resource struct {
	Type ResourceType
	Name string
}

// Topic, Group, Cluster and TransactionalID build Resources.
func Topic(name string) Resource           { return Resource{ResourceTopic, name} }
func Group(name string) Resource           { return Resource{ResourceGroup, name} }
func TransactionalID(name string) Resource { return Resource{ResourceTransactionalID, name} }

// DelegationToken is the resource of a delegation token, by token id; User
// is that of a user principal ("User:alice"), as KIP-373 names it.
func DelegationToken(tokenID string) Resource { return Resource{ResourceDelegationToken, tokenID} }
func User(principal string) Resource          { return Resource{ResourceUser, principal} }

// Cluster is the cluster resource.
var Cluster = Resource{ResourceCluster, ClusterName}

// Binding is one ACL, Kafka's AclBinding: Permission for Principal from
// Host to do Operation on the resources that ResourceName with PatternType
// selects among those of ResourceType.
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// ErrInvalidBinding: a binding or filter that Kafka refuses with
// INVALID_REQUEST.
var ErrInvalidBinding = errors.New("authz: invalid ACL")

// Validate reports, wrapping ErrInvalidBinding, why b cannot be stored:
// Kafka's rules for CreateAcls.
func (b Binding) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidBinding}, args...)...)
	}
	switch {
	case b.ResourceType < ResourceTopic || b.ResourceType > ResourceUser:
		return bad("resource type %s", b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return bad("pattern type %s (want LITERAL or PREFIXED)", b.PatternType)
	case b.Operation < OpAll || b.Operation > OpDescribeTokens:
		return bad("operation %s", b.Operation)
	case b.Permission != Allow && b.Permission != Deny:
		return bad("permission %s (want ALLOW or DENY)", b.Permission)
	case b.ResourceName == "":
		return bad("empty resource name")
	case b.ResourceType == ResourceCluster && (b.ResourceName != ClusterName || b.PatternType != PatternLiteral):
		return bad("the only cluster resource is the literal %s", ClusterName)
	case b.Host == "":
		return bad("empty host (use * for every host)")
	}
	if kind, name, ok := strings.Cut(b.Principal, ":"); !ok || kind == "" || name == "" {
		return bad("principal %q: want Type:name, as User:alice", b.Principal)
	}
	return nil
}

// String is the binding as kafka-acls prints it.
func (b Binding) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s) on %s:%s:%s",
		b.Principal, b.Host, b.Operation, b.Permission, b.ResourceType, b.PatternType, b.ResourceName)
}

var resourceNames = map[ResourceType]string{ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC",
	ResourceGroup: "GROUP", ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER"}

var patternNames = map[PatternType]string{PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH",
	PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED"}

var operationNames = map[Operation]string{OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE",
	OpCreate: "CREATE", OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION",
	OpDescribeConfigs: "DESCRIBE_CONFIGS", OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS"}

var permissionNames = map[Permission]string{PermissionUnknown: "UNKNOWN", PermissionAny: "ANY", Deny: "DENY", Allow: "ALLOW"}

func name[K ~int8](names map[K]string, k K) string {
	if s, ok := names[k]; ok {
		return s
	}
	return fmt.Sprintf("UNKNOWN(%d)", k)
}

// parse finds s among names, ignoring case, underscores and dashes, so
// that "ClusterAction", "cluster-action" and "CLUSTER_ACTION" are one.
func parse[K ~int8](names map[K]string, what, s string) (K, error) {
	norm := func(s string) string {
		return strings.ToUpper(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for k, n := range names {
		if k != 0 && norm(n) == norm(s) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown %s %q", ErrInvalidBinding, what, s)
}

func (t ResourceType) String() string { return name(resourceNames, t) }
func (p PatternType) String() string  { return name(patternNames, p) }
func (o Operation) String() string    { return name(operationNames, o) }
func (p Permission) String() string   { return name(permissionNames, p) }

// ParseResourceType, ParsePatternType, ParseOperation and ParsePermission
// read Kafka's names in any case, with or without underscores
// ("TransactionalId", "transactional-id", "TRANSACTIONAL_ID").
func ParseResourceType(s string) (ResourceType, error) {
	return parse(resourceNames, "resource type", s)
}

func ParsePatternType(s string) (PatternType, error) { return parse(patternNames, "pattern type", s) }
func ParseOperation(s string) (Operation, error)     { return parse(operationNames, "operation", s) }
func ParsePermission(s string) (Permission, error)   { return parse(permissionNames, "permission", s) }
