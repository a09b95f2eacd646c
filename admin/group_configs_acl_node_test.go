package admin_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestGroupConfigACLs: with the StandardAuthorizer, group configs need
// AlterConfigs or DescribeConfigs on the group itself, as in Kafka: alice,
// allowed both on group app-cfg, alters and describes it, and is refused
// GROUP_AUTHORIZATION_FAILED on another group (with no config written);
// Describe on the group alone does not let her describe its configs.
func TestGroupConfigACLs(t *testing.T) {
	a := testnode.StartACLNode(t)
	ctx := proctest.Context(t, 60*time.Second)
	a.AddACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("app-cfg").
		Operations(kadm.OpAlterConfigs, kadm.OpDescribeConfigs))
	a.AddACLs(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("other-cfg").Operations(kadm.OpDescribe))
	alice := a.Client(t, "alice")
	if code, msg := testnode.AlterGroupConfigs(t, ctx, alice, "app-cfg", false, testnode.SetConfigOp("consumer.session.timeout.ms", "50000")); code != 0 {
		t.Fatalf("alice altering app-cfg: %v %q", kerr.ErrorForCode(code), msg)
	}
	if vals, _, code := testnode.DescribeGroupConfigs(t, ctx, alice, "app-cfg"); code != 0 || vals["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("alice describing app-cfg: %v %v", kerr.ErrorForCode(code), vals)
	}
	if code, _ := testnode.AlterGroupConfigs(t, ctx, alice, "other-cfg", false, testnode.SetConfigOp("consumer.session.timeout.ms", "50000")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice altering other-cfg: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if vals, _, code := testnode.DescribeGroupConfigs(t, ctx, alice, "other-cfg"); code != kerr.GroupAuthorizationFailed.Code || len(vals) != 0 {
		t.Fatalf("alice describing other-cfg: %v %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code), vals)
	}
	admin := a.Client(t, "admin")
	if vals, srcs, code := testnode.DescribeGroupConfigs(t, ctx, admin, "other-cfg"); code != 0 || srcs["consumer.session.timeout.ms"] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("other-cfg after alice's refused alteration: %v %v %v", kerr.ErrorForCode(code), vals, srcs)
	}
}
