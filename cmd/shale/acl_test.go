package main

import (
	"strings"
	"testing"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/testnode"
)

func TestACLVerbs(t *testing.T) {
	// The CLI connects over PLAINTEXT as User:ANONYMOUS: a super user here.
	addr := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:ANONYMOUS"
	}).KafkaAddr()
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	const header = "PRINCIPAL  HOST  OPERATION  PERMISSION  RESOURCE  PATTERN  NAME"
	if out := cliOK(t, with("acl", "list")...); strings.TrimSpace(out) != header {
		t.Fatalf("empty list:\n%s", out)
	}
	cliOK(t, with("acl", "add", "--principal", "User:alice", "--operation", "Read,Write", "--topic", "payments")...)
	cliOK(t, with("acl", "add", "--principal", "User:alice", "--operation", "read", "--group", "app-", "--resource-pattern-type", "prefixed")...)
	cliOK(t, with("acl", "add", "--principal", "User:*", "--operation", "Write", "--topic", "*", "--deny", "--host", "10.0.0.9")...)
	want := "PRINCIPAL   HOST      OPERATION  PERMISSION  RESOURCE  PATTERN   NAME\n" +
		"User:*      10.0.0.9  WRITE      DENY        TOPIC     LITERAL   *\n" +
		"User:alice  *         READ       ALLOW       TOPIC     LITERAL   payments\n" +
		"User:alice  *         WRITE      ALLOW       TOPIC     LITERAL   payments\n" +
		"User:alice  *         READ       ALLOW       GROUP     PREFIXED  app-\n"
	if out := cliOK(t, with("acl", "list")...); out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	// match: every ACL that applies to the group app-eu.
	if out := cliOK(t, with("acl", "list", "--group", "app-eu", "--resource-pattern-type", "match")...); !strings.Contains(out, "app-") || strings.Count(out, "\n") != 2 {
		t.Fatalf("match:\n%s", out)
	}
	out := cliOK(t, with("acl", "remove", "--principal", "User:alice", "--topic", "payments", "--operation", "Write", "--output", "json")...)
	if !strings.Contains(out, `"operation": "WRITE"`) || strings.Contains(out, "READ") {
		t.Fatalf("remove answered:\n%s", out)
	}
	if out := cliOK(t, with("acl", "list", "--principal", "User:alice")...); strings.Contains(out, "WRITE") || strings.Count(out, "\n") != 3 {
		t.Fatalf("after remove:\n%s", out)
	}
	for _, args := range [][]string{
		{"acl", "add", "--principal", "alice", "--operation", "Read", "--topic", "t"}, // no principal type: INVALID_REQUEST
		{"acl", "add", "--principal", "User:a", "--operation", "Fly", "--topic", "t"},
		{"acl", "add", "--principal", "User:a", "--operation", "Read"}, // no resource
		{"acl", "add", "--principal", "User:a", "--operation", "Read", "--topic", "t", "--group", "g"},
		{"acl", "remove"}, // would remove everything
	} {
		if _, errOut, code := cliRun(t, with(args...)...); code == 0 {
			t.Errorf("shale %s exited 0 (%s)", strings.Join(args, " "), errOut)
		}
	}
	cliOK(t, with("acl", "remove", "--all")...)
	if out := cliOK(t, with("acl", "list")...); strings.TrimSpace(out) != header {
		t.Fatalf("after remove --all:\n%s", out)
	}
}

func TestACLVerbsWithoutAuthorizer(t *testing.T) {
	addr := startCLINode(t)
	_, errOut, code := cliRun(t, "acl", "list", "--bootstrap", addr)
	if code == 0 || !strings.Contains(errOut, "SECURITY_DISABLED") {
		t.Fatalf("acl list without an authorizer: exit %d, %q", code, errOut)
	}
}
