package acl

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func allow(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: Allow}
}

func deny(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	b := allow(rt, name, pt, principal, host, op)
	b.Permission = Deny
	return b
}

func TestDecide(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	for _, tc := range []struct {
		name        string
		acls        []Binding
		principal   string
		host        string
		op          Operation
		res         Resource
		allowIfNone bool
		want        Decision
	}{
		{"no acls", nil, alice, "10.0.0.1", OpRead, Topic("t"), false, DeniedNoMatch},
		{"no acls, allow everyone", nil, alice, "10.0.0.1", OpRead, Topic("t"), true, AllowedNoACL},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpRead, Topic("t"), false, AllowedByACL},
		{"literal allow, other topic", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpRead, Topic("t2"), false, DeniedNoMatch},
		{"literal allow, other topic, allow everyone", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpRead, Topic("t2"), true, AllowedNoACL},
		{"acl for another user, allow everyone", []Binding{allow(ResourceTopic, "t", PatternLiteral, bob, "*", OpRead)}, alice, "h", OpRead, Topic("t"), true, DeniedNoMatch},
		{"other user", []Binding{allow(ResourceTopic, "t", PatternLiteral, bob, "*", OpRead)}, alice, "h", OpRead, Topic("t"), false, DeniedNoMatch},
		{"other operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpWrite, Topic("t"), false, DeniedNoMatch},
		{"other resource type", []Binding{allow(ResourceGroup, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpRead, Topic("t"), false, DeniedNoMatch},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpRead, Topic("any"), false, AllowedByACL},
		{"prefixed", []Binding{allow(ResourceTopic, "pay-", PatternPrefixed, alice, "*", OpWrite)}, alice, "h", OpWrite, Topic("pay-eu"), false, AllowedByACL},
		{"prefixed, not a prefix", []Binding{allow(ResourceTopic, "pay-", PatternPrefixed, alice, "*", OpWrite)}, alice, "h", OpWrite, Topic("pa"), false, DeniedNoMatch},
		{"prefixed star is no wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, alice, "*", OpWrite)}, alice, "h", OpWrite, Topic("t"), false, DeniedNoMatch},
		{"literal is not a prefix", []Binding{allow(ResourceTopic, "pay", PatternLiteral, alice, "*", OpWrite)}, alice, "h", OpWrite, Topic("payments"), false, DeniedNoMatch},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, "*", OpRead)}, alice, "h", OpRead, Topic("t"), false, AllowedByACL},
		{"host matches", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "10.0.0.1", OpRead)}, alice, "10.0.0.1", OpRead, Topic("t"), false, AllowedByACL},
		{"host differs", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "10.0.0.1", OpRead)}, alice, "10.0.0.2", OpRead, Topic("t"), false, DeniedNoMatch},
		{"all allows read", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)}, alice, "h", OpRead, Topic("t"), false, AllowedByACL},
		{"read implies describe", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpDescribe, Topic("t"), false, AllowedByACL},
		{"write implies describe", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, alice, "h", OpDescribe, Topic("t"), false, AllowedByACL},
		{"delete implies describe", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDelete)}, alice, "h", OpDescribe, Topic("t"), false, AllowedByACL},
		{"alter implies describe", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAlter)}, alice, "h", OpDescribe, Topic("t"), false, AllowedByACL},
		{"create does not imply describe", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpCreate)}, alice, "h", OpDescribe, Topic("t"), false, DeniedNoMatch},
		{"describe does not imply read", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDescribe)}, alice, "h", OpRead, Topic("t"), false, DeniedNoMatch},
		{"alterconfigs implies describeconfigs", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAlterConfigs)}, alice, "h", OpDescribeConfigs, Topic("t"), false, AllowedByACL},
		{"describeconfigs does not imply alterconfigs", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpDescribeConfigs)}, alice, "h", OpAlterConfigs, Topic("t"), false, DeniedNoMatch},
		{"deny wins over allow", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpRead, Topic("t"), false, DeniedByDeny},
		{"prefixed deny wins over literal allow", []Binding{
			allow(ResourceTopic, "pay-eu", PatternLiteral, alice, "*", OpRead),
			deny(ResourceTopic, "pay-", PatternPrefixed, alice, "*", OpRead)}, alice, "h", OpRead, Topic("pay-eu"), false, DeniedByDeny},
		{"wildcard deny wins", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll),
			deny(ResourceTopic, "*", PatternLiteral, WildcardPrincipal, "*", OpWrite)}, alice, "h", OpWrite, Topic("t"), false, DeniedByDeny},
		{"deny all denies read", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)}, alice, "h", OpRead, Topic("t"), false, DeniedByDeny},
		{"deny read does not deny describe", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, alice, "h", OpDescribe, Topic("t"), false, AllowedByACL},
		{"deny from one host", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, alice, "10.0.0.9", OpRead)}, alice, "10.0.0.1", OpRead, Topic("t"), false, AllowedByACL},
		{"deny for another user", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, bob, "*", OpRead)}, alice, "h", OpRead, Topic("t"), false, AllowedByACL},
		{"cluster", []Binding{allow(ResourceCluster, ClusterName, PatternLiteral, alice, "*", OpIdempotentWrite)}, alice, "h", OpIdempotentWrite, Cluster, false, AllowedByACL},
		{"transactional id prefixed", []Binding{allow(ResourceTransactionalID, "app-", PatternPrefixed, alice, "*", OpWrite)}, alice, "h", OpWrite, TransactionalID("app-1"), false, AllowedByACL},
		{"wildcard principal is only users", []Binding{allow(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, "*", OpRead)}, "Group:x", "h", OpRead, Topic("t"), false, DeniedNoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewSet(tc.acls).Decide(tc.principal, tc.host, tc.op, tc.res, tc.allowIfNone)
			if got != tc.want {
				t.Errorf("Decide = %v (%d), want %v (%d)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestDecideAny(t *testing.T) {
	const alice = "User:alice"
	for _, tc := range []struct {
		name        string
		acls        []Binding
		allowIfNone bool
		want        bool
	}{
		{"none", nil, false, false},
		{"none, allow everyone", nil, true, true},
		{"write on one topic", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false, true},
		{"write on a prefix", []Binding{allow(ResourceTopic, "p-", PatternPrefixed, alice, "*", OpWrite)}, false, true},
		{"read only", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, false, false},
		{"all", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)}, false, true},
		{"denied by wildcard", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite)}, false, false},
		{"denied by literal", []Binding{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false, false},
		{"denied by prefix", []Binding{allow(ResourceTopic, "p-1", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "p-", PatternPrefixed, alice, "*", OpWrite)}, false, false},
		{"prefix allow, literal deny inside it", []Binding{allow(ResourceTopic, "p-", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "p-1", PatternLiteral, alice, "*", OpWrite)}, false, true},
		{"one of two denied", []Binding{allow(ResourceTopic, "a", PatternLiteral, alice, "*", OpWrite),
			allow(ResourceTopic, "b", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "a", PatternLiteral, alice, "*", OpWrite)}, false, true},
		{"other type only", []Binding{allow(ResourceGroup, "g", PatternLiteral, alice, "*", OpWrite)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewSet(tc.acls).DecideAny(alice, "h", OpWrite, ResourceTopic, tc.allowIfNone)
			if got.Allowed() != tc.want {
				t.Errorf("DecideAny = %v, want allowed %v", got, tc.want)
			}
		})
	}
}

func TestFilterMatches(t *testing.T) {
	lit := allow(ResourceTopic, "pay-eu", PatternLiteral, "User:alice", "*", OpRead)
	pre := allow(ResourceTopic, "pay-", PatternPrefixed, "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:bob", "10.0.0.1", OpWrite)
	grp := deny(ResourceGroup, "pay-eu", PatternLiteral, "User:alice", "*", OpRead)
	all := []Binding{lit, pre, wild, grp}
	f := func(mod func(*Filter)) Filter { x := MatchAll; mod(&x); return x }
	for _, tc := range []struct {
		name   string
		filter Filter
		want   []Binding
	}{
		{"all", MatchAll, all},
		{"topic", f(func(x *Filter) { x.ResourceType = ResourceTopic }), []Binding{lit, pre, wild}},
		{"any pattern by name", f(func(x *Filter) { x.ResourceName = "pay-eu" }), []Binding{lit, grp}},
		{"literal", f(func(x *Filter) { x.PatternType = PatternLiteral }), []Binding{lit, wild, grp}},
		{"prefixed", f(func(x *Filter) { x.PatternType = PatternPrefixed }), []Binding{pre}},
		{"match name", f(func(x *Filter) { x.ResourceType, x.PatternType, x.ResourceName = ResourceTopic, PatternMatch, "pay-eu" }), []Binding{lit, pre, wild}},
		{"match other name", f(func(x *Filter) { x.ResourceType, x.PatternType, x.ResourceName = ResourceTopic, PatternMatch, "orders" }), []Binding{wild}},
		{"match without a name", f(func(x *Filter) { x.PatternType = PatternMatch }), all},
		{"principal", f(func(x *Filter) { x.Principal = "User:bob" }), []Binding{wild}},
		{"host", f(func(x *Filter) { x.Host = "10.0.0.1" }), []Binding{wild}},
		{"operation", f(func(x *Filter) { x.Operation = OpWrite }), []Binding{wild}},
		{"permission", f(func(x *Filter) { x.Permission = Deny }), []Binding{grp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewSet(all).Select(tc.filter)
			if len(got) != len(tc.want) {
				t.Fatalf("Select = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Select = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid binding: %v", err)
	}
	if err := allow(ResourceCluster, ClusterName, PatternLiteral, "User:a", "*", OpAlter).Validate(); err != nil {
		t.Fatalf("valid cluster binding: %v", err)
	}
	for name, mod := range map[string]func(*Binding){
		"any resource":       func(b *Binding) { b.ResourceType = ResourceAny },
		"match pattern":      func(b *Binding) { b.PatternType = PatternMatch },
		"any operation":      func(b *Binding) { b.Operation = OpAny },
		"any permission":     func(b *Binding) { b.Permission = PermissionAny },
		"empty name":         func(b *Binding) { b.ResourceName = "" },
		"principal no type":  func(b *Binding) { b.Principal = "alice" },
		"empty host":         func(b *Binding) { b.Host = "" },
		"cluster named else": func(b *Binding) { b.ResourceType, b.ResourceName = ResourceCluster, "c" },
		"cluster prefixed": func(b *Binding) {
			b.ResourceType, b.ResourceName, b.PatternType = ResourceCluster, ClusterName, PatternPrefixed
		},
	} {
		b := ok
		mod(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalidBinding) {
			t.Errorf("%s: Validate = %v, want ErrInvalidBinding", name, err)
		}
	}
	if err := (Filter{}).Validate(); !errors.Is(err, ErrInvalidBinding) {
		t.Errorf("zero filter: %v", err)
	}
	if err := MatchAll.Validate(); err != nil {
		t.Errorf("MatchAll: %v", err)
	}
}

func TestParseNames(t *testing.T) {
	for in, want := range map[string]Operation{"Read": OpRead, "CLUSTER_ACTION": OpClusterAction, "ClusterAction": OpClusterAction,
		"describe-configs": OpDescribeConfigs, "IdempotentWrite": OpIdempotentWrite, "all": OpAll} {
		if got, err := ParseOperation(in); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := ParseResourceType("TransactionalId"); err != nil || got != ResourceTransactionalID {
		t.Errorf("ParseResourceType(TransactionalId) = %v, %v", got, err)
	}
	if _, err := ParseOperation("Fly"); !errors.Is(err, ErrInvalidBinding) {
		t.Errorf("ParseOperation(Fly) = %v", err)
	}
	// Kafka's wire codes, which the handlers cast to and from kmsg's.
	if OpIdempotentWrite != Operation(kmsg.ACLOperationIdempotentWrite) || ResourceTransactionalID != ResourceType(kmsg.ACLResourceTypeTransactionalId) ||
		PatternPrefixed != PatternType(kmsg.ACLResourcePatternTypePrefixed) || Allow != Permission(kmsg.ACLPermissionTypeAllow) ||
		OpCreateTokens != Operation(kmsg.ACLOperationCreateTokens) || OpDescribeTokens != Operation(kmsg.ACLOperationDescribeTokens) ||
		ResourceUser != ResourceType(kmsg.ACLResourceTypeUser) || ResourceDelegationToken != ResourceType(kmsg.ACLResourceTypeDelegationToken) {
		t.Error("codes differ from Kafka's")
	}
	// KIP-373's resource types and operations are bindings' too.
	b := Binding{ResourceType: ResourceUser, ResourceName: "User:alice", PatternType: PatternLiteral, Principal: "User:bob",
		Host: "*", Operation: OpCreateTokens, Permission: Allow}
	if err := b.Validate(); err != nil {
		t.Errorf("CreateTokens on a user: %v", err)
	}
	if got, err := ParseOperation("describe-tokens"); err != nil || got != OpDescribeTokens {
		t.Errorf("ParseOperation(describe-tokens) = %v, %v", got, err)
	}
}
