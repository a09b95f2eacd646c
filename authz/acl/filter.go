package acl

import (
	"fmt"
	"strings"
)

// Filter selects bindings, Kafka's AclBindingFilter, as DescribeAcls and
// DeleteAcls send it. The Any values of the enums match everything; an
// empty ResourceName, Principal or Host (a null on the wire) matches every
// value.
type Filter struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

// MatchAll is the filter that selects every binding.
var MatchAll = Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}

// Validate reports, wrapping ErrInvalidBinding, a filter with an UNKNOWN
// element, which Kafka refuses with INVALID_REQUEST.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType <= ResourceUnknown || f.ResourceType > ResourceUser:
		return fmt.Errorf("%w: filter resource type %s", ErrInvalidBinding, f.ResourceType)
	case f.PatternType <= PatternUnknown || f.PatternType > PatternPrefixed:
		return fmt.Errorf("%w: filter pattern type %s", ErrInvalidBinding, f.PatternType)
	case f.Operation <= OpUnknown || f.Operation > OpDescribeTokens:
		return fmt.Errorf("%w: filter operation %s", ErrInvalidBinding, f.Operation)
	case f.Permission <= PermissionUnknown || f.Permission > Allow:
		return fmt.Errorf("%w: filter permission %s", ErrInvalidBinding, f.Permission)
	}
	return nil
}

// Matches reports whether f selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		if f.ResourceName != "" && f.ResourceName != b.ResourceName {
			return false
		}
	case PatternMatch:
		if f.ResourceName != "" && !appliesTo(b, f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != b.PatternType || (f.ResourceName != "" && f.ResourceName != b.ResourceName) {
			return false
		}
	}
	return (f.Principal == "" || f.Principal == b.Principal) &&
		(f.Host == "" || f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}

// appliesTo reports whether b's pattern selects the resource called name
// (of b's type).
func appliesTo(b Binding, name string) bool {
	switch b.PatternType {
	case PatternLiteral:
		return b.ResourceName == name || b.ResourceName == WildcardResource
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}
