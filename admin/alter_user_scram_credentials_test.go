package admin_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestAlterUserSCRAMCredentialsChecksBothHalves: deletions and upsertions
// go through the same checks (an empty user name is
// UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
// a user named twice DUPLICATE_RESOURCE), one result per user in the order
// the users first appear, deletions before upsertions; a failed user
// changes nothing and the others still apply.
func TestAlterUserSCRAMCredentialsChecksBothHalves(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 30*time.Second)

	deletion := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		return d
	}
	upsertion := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = user, mech, 4096
		u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 32)
		return u
	}
	type result struct {
		user string
		code int16
	}
	alter := func(dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) []result {
		t.Helper()
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = dels, ups
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var out []result
		for _, r := range resp.Results {
			out = append(out, result{r.User, r.ErrorCode})
		}
		return out
	}
	check := func(got, want []result) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("results %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("results %v, want %v", got, want)
			}
		}
	}
	described := func(user string) int16 {
		t.Helper()
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = user
		req.Users = append(req.Users, u)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != 1 {
			t.Fatalf("describe %q: %d results", user, len(resp.Results))
		}
		return resp.Results[0].ErrorCode
	}

	check(alter(
		[]kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("", 1), deletion("carol", 9), deletion("dave", 1), deletion("gina", 1)},
		[]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("erin", 9), upsertion("frank", 1), upsertion("gina", 1)},
	), []result{
		{"", kerr.UnacceptableCredential.Code},
		{"carol", kerr.UnsupportedSaslMechanism.Code},
		{"dave", kerr.ResourceNotFound.Code},
		{"gina", kerr.DuplicateResource.Code},
		{"erin", kerr.UnsupportedSaslMechanism.Code},
		{"frank", 0},
	})
	if code := described("frank"); code != 0 {
		t.Fatalf("describe frank after its upsertion: code %d", code)
	}
	if code := described("gina"); code != kerr.ResourceNotFound.Code {
		t.Fatalf("describe gina, refused as named twice: code %d, want RESOURCE_NOT_FOUND", code)
	}

	check(alter(
		[]kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("frank", 1)},
		[]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion("", 2)},
	), []result{
		{"frank", 0},
		{"", kerr.UnacceptableCredential.Code},
	})
	if code := described("frank"); code != kerr.ResourceNotFound.Code {
		t.Fatalf("describe frank after its deletion: code %d, want RESOURCE_NOT_FOUND", code)
	}
}
