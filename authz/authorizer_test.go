package authz

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func allow(rt acl.ResourceType, name string, pt acl.PatternType, principal, host string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: acl.Allow}
}

func deny(rt acl.ResourceType, name string, pt acl.PatternType, principal, host string, op acl.Operation) acl.Binding {
	b := allow(rt, name, pt, principal, host, op)
	b.Permission = acl.Deny
	return b
}

func TestAuthorizerSuperUsersAndAudit(t *testing.T) {
	var denied []string
	a := New(Config{SuperUsers: ParseSuperUsers("User:admin; User:CN=broker,O=ops"),
		OnDenied: func(api string, op acl.Operation, rt acl.ResourceType) {
			denied = append(denied, api+" "+op.String()+" "+rt.String())
		}})
	a.SetBindings(acl.NewSet([]acl.Binding{deny(acl.ResourceTopic, "*", acl.PatternLiteral, acl.WildcardPrincipal, "*", acl.OpAll)}))
	req := func(principal string) *kafka.Request {
		return &kafka.Request{Key: int16(kmsg.Fetch), Conn: &kafka.ConnInfo{Principal: principal, Remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5}}}
	}
	if !a.Authorize(req("User:admin"), acl.OpRead, acl.Topic("t")) || !a.Authorize(req("User:CN=broker,O=ops"), acl.OpRead, acl.Topic("t")) {
		t.Error("a super user was denied, despite a deny-all")
	}
	if a.Authorize(req("User:alice"), acl.OpRead, acl.Topic("t")) {
		t.Error("alice allowed")
	}
	if a.Permits(req("User:alice"), acl.OpRead, acl.Topic("t")) {
		t.Error("alice permitted")
	}
	if len(denied) != 1 || denied[0] != "Fetch READ TOPIC" {
		t.Errorf("audited %q, want one Fetch READ TOPIC (Permits is not audited)", denied)
	}
	var off *Authorizer
	if !off.Authorize(req("User:alice"), acl.OpRead, acl.Topic("t")) || !off.AuthorizeAny(req("x"), acl.OpWrite, acl.ResourceTopic) || off.Enabled() {
		t.Error("a nil authorizer must allow everything")
	}
	if got := Host(req("x").Conn); got != "10.0.0.1" {
		t.Errorf("Host = %q", got)
	}
	if got := Principal(&kafka.ConnInfo{}); got != kafka.AnonymousPrincipal {
		t.Errorf("Principal = %q", got)
	}
}

func TestAuditLogIsRateLimited(t *testing.T) {
	var buf strings.Builder
	a := New(Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	req := &kafka.Request{Key: int16(kmsg.Produce), ClientID: "app-1",
		Conn: &kafka.ConnInfo{Principal: "User:bob", Remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 5}}}
	for range 50 {
		if a.Authorize(req, acl.OpWrite, acl.Topic("payments")) {
			t.Fatal("allowed without ACLs")
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 1 || len(lines) > 10 {
		t.Fatalf("%d audit lines for 50 denials in well under a second, want at most 5 per second:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{`msg="authorization denied"`, "principal=User:bob", "host=10.0.0.7", "api=Produce",
		"operation=WRITE", "resource_type=TOPIC", "resource=payments", `reason="no ALLOW ACL matched"`, "client_id=app-1"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("audit line %q lacks %s", lines[0], want)
		}
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := New(Config{})
	a.SetBindings(acl.NewSet([]acl.Binding{allow(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", "*", acl.OpRead),
		allow(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", "*", acl.OpAlterConfigs)}))
	req := &kafka.Request{Conn: &kafka.ConnInfo{Principal: "User:alice", Remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)}}}
	want := int32(1<<acl.OpRead | 1<<acl.OpDescribe | 1<<acl.OpAlterConfigs | 1<<acl.OpDescribeConfigs)
	if got := a.AuthorizedOperations(req, acl.Topic("t")); got != want {
		t.Errorf("topic t: %b, want %b", got, want)
	}
	if got := a.AuthorizedOperations(req, acl.Group("g")); got != 0 {
		t.Errorf("group g: %b, want none", got)
	}
	var off *Authorizer
	if got := off.AuthorizedOperations(req, acl.Group("g")); got != 1<<acl.OpRead|1<<acl.OpDescribe|1<<acl.OpDelete {
		t.Errorf("no authorizer, group: %b, want Read, Describe and Delete", got)
	}
}
