package admin

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// TestCheckFeatureUpdates holds checkFeatureUpdates to Kafka's rules where
// a real client cannot reach (franz-go sends UpdateFeatures at the newest
// version): v0's AllowDowngrade is a safe downgrade, and without it a
// downgrade is refused; a feature named twice is INVALID_REQUEST.
func TestCheckFeatureUpdates(t *testing.T) {
	features := []kafka.Feature{{Name: "transaction.version", MinLevel: 0, MaxLevel: 2, Finalized: 2}}
	update := func(level int16, allow bool, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.AllowDowngrade, u.UpgradeType = "transaction.version", level, allow, typ
		return u
	}
	cases := []struct {
		name    string
		version int16
		updates []kmsg.UpdateFeaturesRequestFeatureUpdate
		code    int16
	}{
		{"v0 downgrade allowed", 0, []kmsg.UpdateFeaturesRequestFeatureUpdate{update(1, true, 0)}, 0},
		{"v0 downgrade not allowed", 0, []kmsg.UpdateFeaturesRequestFeatureUpdate{update(1, false, 0)}, kerr.InvalidUpdateVersion.Code},
		{"v1 upgrade type 0", 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{update(2, false, 0)}, kerr.InvalidUpdateVersion.Code},
		{"v1 same level as an upgrade", 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{update(2, false, 1)}, 0},
		{"named twice", 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{update(2, false, 1), update(1, false, 2)}, kerr.InvalidRequest.Code},
	}
	for _, c := range cases {
		_, err := checkFeatureUpdates(c.version, c.updates, features)
		code := int16(0)
		if err != nil {
			code = err.code
		}
		if code != c.code {
			t.Errorf("%s: code %d (%v), want %d", c.name, code, err, c.code)
		}
	}
}
