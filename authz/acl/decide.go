package acl

import "strings"

// Set is an immutable set of bindings indexed for the authorizer's
// decisions. Build it with NewSet; it is safe for concurrent use.
type Set struct {
	all    []Binding
	byType map[ResourceType]*typeIndex
}

// typeIndex holds the bindings of one resource type.
type typeIndex struct {
	literal  map[string][]Binding // by resource name, without the wildcard
	wildcard []Binding            // literal "*"
	prefixed []Binding
}

// NewSet indexes bindings; duplicates count once. It keeps no reference to
// the slice.
func NewSet(bindings []Binding) *Set {
	s := &Set{byType: map[ResourceType]*typeIndex{}}
	seen := map[Binding]bool{}
	for _, b := range bindings {
		if seen[b] {
			continue
		}
		seen[b] = true
		s.all = append(s.all, b)
		ix := s.byType[b.ResourceType]
		if ix == nil {
			ix = &typeIndex{literal: map[string][]Binding{}}
			s.byType[b.ResourceType] = ix
		}
		switch {
		case b.PatternType == PatternPrefixed:
			ix.prefixed = append(ix.prefixed, b)
		case b.ResourceName == WildcardResource:
			ix.wildcard = append(ix.wildcard, b)
		default:
			ix.literal[b.ResourceName] = append(ix.literal[b.ResourceName], b)
		}
	}
	return s
}

// Len is the number of bindings in s.
func (s *Set) Len() int { return len(s.all) }

// Select returns the bindings f matches, in the order NewSet was given
// them. The caller owns the returned slice.
func (s *Set) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range s.all {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Decision is why the authorizer allowed or denied an action; the audit
// log names it.
type Decision int8

// The decisions.
const (
	// DeniedNoMatch: no ALLOW binding matched (and some binding applies to
	// the resource, or allow_everyone_if_no_acl_found is off).
	DeniedNoMatch Decision = iota
	// DeniedByDeny: a DENY binding matched.
	DeniedByDeny
	// AllowedByACL: an ALLOW binding matched and no DENY did.
	AllowedByACL
	// AllowedNoACL: no binding applies to the resource and
	// allow_everyone_if_no_acl_found is on.
	AllowedNoACL
	// AllowedSuperUser: the principal is a super user.
	AllowedSuperUser
)

// Allowed reports whether d lets the action through.
func (d Decision) Allowed() bool { return d >= AllowedByACL }

func (d Decision) String() string {
	switch d {
	case DeniedNoMatch:
		return "no ALLOW ACL matched"
	case DeniedByDeny:
		return "a DENY ACL matched"
	case AllowedByACL:
		return "an ALLOW ACL matched"
	case AllowedNoACL:
		return "no ACL on the resource (allow_everyone_if_no_acl_found)"
	case AllowedSuperUser:
		return "super user"
	}
	return "unknown"
}

// Decide is Kafka's StandardAuthorizer's rule for one action, without super
// users: the bindings that apply are those of res's type whose pattern
// selects res's name; with none and allowIfNone, the action is allowed.
// Otherwise a DENY binding for the principal (or User:*), from host (or *),
// of op (or All) denies, whatever allows; else an ALLOW binding of op, All,
// or an operation that implies op (Read, Write, Delete and Alter imply
// Describe; AlterConfigs implies DescribeConfigs) allows; else it is
// denied. A nil Set holds no bindings.
func (s *Set) Decide(principal, host string, op Operation, res Resource, allowIfNone bool) Decision {
	var ix *typeIndex
	if s != nil {
		ix = s.byType[res.Type]
	}
	var applies [3][]Binding
	if ix != nil {
		applies[0], applies[1] = ix.literal[res.Name], ix.wildcard
		for _, b := range ix.prefixed {
			if strings.HasPrefix(res.Name, b.ResourceName) {
				applies[2] = append(applies[2], b)
			}
		}
	}
	if len(applies[0])+len(applies[1])+len(applies[2]) == 0 {
		if allowIfNone {
			return AllowedNoACL
		}
		return DeniedNoMatch
	}
	allowed := false
	for _, group := range applies {
		for _, b := range group {
			if !principalMatches(b.Principal, principal) || !hostMatches(b.Host, host) {
				continue
			}
			if b.Permission == Deny && (b.Operation == op || b.Operation == OpAll) {
				return DeniedByDeny
			}
			if b.Permission == Allow && implies(b.Operation, op) {
				allowed = true
			}
		}
	}
	if allowed {
		return AllowedByACL
	}
	return DeniedNoMatch
}

// DecideAny is Kafka's authorizeByResourceType: whether the principal may
// do op on at least one resource of type rt, as InitProducerId asks for
// Write on any topic. It is allowed when some ALLOW binding of the type
// (for the principal, the host and op) selects names that no DENY binding
// covers: a DENY on the literal "*", or a DENY whose prefix starts the
// allowed name, or a literal DENY of the same literal name, cancels it.
// With allowIfNone and no binding of the type at all, it is allowed.
func (s *Set) DecideAny(principal, host string, op Operation, rt ResourceType, allowIfNone bool) Decision {
	var ix *typeIndex
	if s != nil {
		ix = s.byType[rt]
	}
	if ix == nil {
		if allowIfNone {
			return AllowedNoACL
		}
		return DeniedNoMatch
	}
	var denyLiteral = map[string]bool{}
	var denyPrefixes []string
	var allows []Binding
	visit := func(bs []Binding) {
		for _, b := range bs {
			if !principalMatches(b.Principal, principal) || !hostMatches(b.Host, host) {
				continue
			}
			switch {
			case b.Permission == Deny && (b.Operation == op || b.Operation == OpAll):
				if b.PatternType == PatternPrefixed {
					denyPrefixes = append(denyPrefixes, b.ResourceName)
				} else {
					denyLiteral[b.ResourceName] = true
				}
			case b.Permission == Allow && implies(b.Operation, op):
				allows = append(allows, b)
			}
		}
	}
	for _, bs := range ix.literal {
		visit(bs)
	}
	visit(ix.wildcard)
	visit(ix.prefixed)
	if denyLiteral[WildcardResource] {
		return DeniedByDeny
	}
	denied := false
	for _, a := range allows {
		covered := false
		for _, p := range denyPrefixes {
			covered = covered || strings.HasPrefix(a.ResourceName, p)
		}
		if a.PatternType == PatternLiteral {
			covered = covered || denyLiteral[a.ResourceName]
		}
		if !covered {
			return AllowedByACL
		}
		denied = true
	}
	if denied {
		return DeniedByDeny
	}
	return DeniedNoMatch
}

func principalMatches(pattern, principal string) bool {
	return pattern == principal || (pattern == WildcardPrincipal && strings.HasPrefix(principal, "User:"))
}

func hostMatches(pattern, host string) bool { return pattern == WildcardHost || pattern == host }

// implies reports whether an ALLOW of granted grants want.
func implies(granted, want Operation) bool {
	if granted == want || granted == OpAll {
		return true
	}
	switch want {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}
