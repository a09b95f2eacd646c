package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// finalizedOn asks node id's ApiVersions for its finalized feature levels
// and epoch.
func finalizedOn(t *testing.T, ctx context.Context, cl *kgo.Client, id int32) (map[string]int16, int64) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "shale-test", "1.0"
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	out := map[string]int16{}
	for _, f := range av.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out, av.FinalizedFeaturesEpoch
}

// TestUpdateFeatures: UpdateFeatures with Kafka's rules through kadm, on
// two nodes. An unknown feature, a level outside the supported range, a
// downgrade with upgrade type UPGRADE and an unknown upgrade type are
// INVALID_UPDATE_VERSION and change nothing; validate-only changes nothing;
// a safe downgrade of transaction.version to 1 and an unsafe one of
// group.version to 0 (removed from FinalizedFeatures) are then what both
// nodes' ApiVersions answer, at a new epoch; transaction.version at 0 is
// removed too; an upgrade back returns to the start. Before, UpdateFeatures was not
// served.
func TestUpdateFeatures(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 2)
	ctx := proctest.Context(t, 60*time.Second)
	cl := testnode.Client(t, nodes[0].KafkaAddr())
	adm := kadm.NewClient(cl)
	proctest.Eventually(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	initial := map[string]int16{"transaction.version": 2, "group.version": 1, "share.version": 1}
	for _, id := range []int32{1, 2} {
		if got, epoch := finalizedOn(t, ctx, cl, id); !equalLevels(got, initial) || epoch != 1 {
			t.Fatalf("node %d before any update: %v at epoch %d, want %v at 1", id, got, epoch, initial)
		}
	}

	refused := []struct {
		what string
		u    kadm.FeatureUpdate
	}{
		{"unknown feature", kadm.FeatureUpdate{Feature: "metadata.version", MaxVersionLevel: 20, UpgradeType: 1}},
		{"share.version above its supported range", kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 2, UpgradeType: 1}},
		{"above the supported range", kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 3, UpgradeType: 1}},
		{"a downgrade as an upgrade", kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 1}},
		{"an unknown upgrade type", kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 7}},
		{"a negative level", kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: -1, UpgradeType: 3}},
	}
	for _, r := range refused {
		res, err := adm.UpdateFeatures(ctx, false, r.u)
		if err == nil {
			err = res.Error()
		}
		if !errors.Is(err, kerr.InvalidUpdateVersion) {
			t.Errorf("%s: %v, want INVALID_UPDATE_VERSION", r.what, err)
		}
	}
	res, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("validate-only safe downgrade: %v %v", err, res.Error())
	}
	if got, epoch := finalizedOn(t, ctx, cl, 1); !equalLevels(got, initial) || epoch != 1 {
		t.Fatalf("after the refused and validate-only updates: %v at epoch %d, want %v at 1", got, epoch, initial)
	}

	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 2},
		kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 3},
		kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("downgrade: %v %v", err, res.Error())
	}
	want := map[string]int16{"transaction.version": 1}
	for _, id := range []int32{1, 2} {
		proctest.Eventually(t, 10*time.Second, "the downgrade on every node", func() bool {
			got, epoch := finalizedOn(t, ctx, cl, id)
			return equalLevels(got, want) && epoch > 1
		})
	}

	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("removing transaction.version: %v %v", err, res.Error())
	}
	proctest.Eventually(t, 10*time.Second, "no finalized feature", func() bool {
		got, _ := finalizedOn(t, ctx, cl, 1)
		return len(got) == 0
	})

	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1},
		kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1},
		kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res.Error() != nil {
		t.Fatalf("upgrade: %v %v", err, res.Error())
	}
	for _, id := range []int32{1, 2} {
		proctest.Eventually(t, 10*time.Second, "the upgrade on every node", func() bool {
			got, _ := finalizedOn(t, ctx, cl, id)
			return equalLevels(got, initial)
		})
	}
}

func equalLevels(a, b map[string]int16) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
