package group_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestFindShareCoordinator: FindCoordinator v6 key type 2 (KIP-932)
// answers a share coordinator key "group:topicId:partition" with the
// leader of its __share_group_state partition (the topic created on first
// use); a malformed key, or type 2 below v6, is INVALID_REQUEST; group
// keys are answered as before in the same batch.
func TestFindShareCoordinator(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 60*time.Second)

	id := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef"))
	good := "sg:" + id + ":3"
	// find answers keys by key (kgo may split a batch and merge the
	// answers in another order), retrying while the first key's
	// coordinator is not available.
	find := func(cl *kgo.Client, keyType int8, keys ...string) (int16, map[string]kmsg.FindCoordinatorResponseCoordinator) {
		t.Helper()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = keyType, keys
		var resp *kmsg.FindCoordinatorResponse
		var err error
		var byKey map[string]kmsg.FindCoordinatorResponseCoordinator
		if perr := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
			resp, err = req.RequestWith(ctx, cl)
			byKey = map[string]kmsg.FindCoordinatorResponseCoordinator{}
			if err == nil {
				for _, c := range resp.Coordinators {
					byKey[c.Key] = c
				}
			}
			c, ok := byKey[keys[0]]
			return ok && len(byKey) == len(keys) && c.ErrorCode != kerr.CoordinatorNotAvailable.Code
		}); perr != nil {
			t.Fatalf("FindCoordinator type %d %v: %v %+v", keyType, keys, err, resp)
		}
		return resp.Version, byKey
	}

	version, got := find(cl, 2, good, "no-colons", "sg:"+id+":-1", "sg:notanid:0")
	if version != 6 {
		t.Fatalf("FindCoordinator went as v%d, want v6", version)
	}
	if c := got[good]; c.ErrorCode != 0 || c.Key != good || c.NodeID != 0 || c.Port <= 0 {
		t.Fatalf("share key %s: %+v, want node 0", good, c)
	}
	for _, key := range []string{"no-colons", "sg:" + id + ":-1", "sg:notanid:0"} {
		if c := got[key]; c.ErrorCode != kerr.InvalidRequest.Code || c.NodeID != -1 {
			t.Fatalf("malformed share key %q: %+v, want INVALID_REQUEST", c.Key, c)
		}
	}
	if _, got := find(cl, 0, "a-group"); got["a-group"].ErrorCode != 0 || got["a-group"].NodeID != 0 {
		t.Fatalf("group key at v6: %+v", got["a-group"])
	}

	v5 := kversion.V4_4_0()
	v5.SetMaxKeyVersion(int16(kmsg.FindCoordinator), 5)
	cl5 := testnode.Client(t, n.KafkaAddr(), kgo.MaxVersions(v5))
	version, got = find(cl5, 2, good)
	if c := got[good]; version != 5 || c.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("share key at v%d: %+v, want INVALID_REQUEST", version, c)
	}
}
