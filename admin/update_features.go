package admin

// UpdateFeatures (key 57), versions 0-2.
//
// Finalizes feature levels for the cluster (KIP-584), as Kafka's
// FeatureControlManager.updateFeatures: the levels are written to the
// control plane (controlplane.Features) by compare-and-set, and every node
// then advertises them in ApiVersions (FinalizedFeatures, with the
// revision as FinalizedFeaturesEpoch). The request is all or nothing: the
// first update that breaks a rule fails the whole request, nothing is
// written, and its error is the answer's.
//
//   - Alter on the cluster is needed: CLUSTER_AUTHORIZATION_FAILED.
//   - A feature the node does not advertise, an unknown upgrade type, a
//     level below 0 or outside the supported range (0 removes the
//     feature, allowed when the supported range starts at 0) are
//     INVALID_UPDATE_VERSION, with Kafka's messages; so is a level below
//     the finalized one with upgrade type UPGRADE (1): a downgrade needs
//     SAFE_DOWNGRADE (2) or UNSAFE_DOWNGRADE (3). A feature named twice is
//     INVALID_REQUEST.
//   - v0: AllowDowngrade instead of UpgradeType (true is SAFE_DOWNGRADE).
//     v1: ValidateOnly checks and writes nothing. v0-v1: Results, one per
//     feature with the request's error; v2 answers only the top-level
//     error.
//
// Shale's coordinators and leaders follow each request's version, not the
// finalized level (as Kafka's do for transaction.version), so a level
// changes what clients choose, not what is served.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
)

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	upgradeTypeUpgrade       = 1
	upgradeTypeSafeDowngrade = 2
	upgradeTypeUnsafe        = 3
)

// registerFeatures serves UpdateFeatures over f for the features reg
// advertises; nil f leaves it unregistered.
func (h *Handlers) registerFeatures(reg *kafka.Registry, f *controlplane.Features) {
	if f == nil {
		return
	}
	reg.Register(kmsg.UpdateFeatures, 0, 2, func(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
		return h.handleUpdateFeatures(ctx, req, reg, f)
	})
}

// featureError is the request's one error.
type featureError struct {
	code int16
	msg  string
}

func (e *featureError) Error() string { return e.msg }

func invalidUpdate(name string, level int16, why string) *featureError {
	return &featureError{code: kerr.InvalidUpdateVersion.Code,
		msg: fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, why)}
}

// checkFeatureUpdates applies Kafka's rules to updates against the
// advertised features and returns the new finalized levels, or the first
// update's error.
func checkFeatureUpdates(version int16, updates []kmsg.UpdateFeaturesRequestFeatureUpdate, features []kafka.Feature) (map[string]int16, *featureError) {
	byName := map[string]kafka.Feature{}
	for _, f := range features {
		byName[f.Name] = f
	}
	next := map[string]int16{}
	for _, u := range updates {
		if _, dup := next[u.Feature]; dup {
			return nil, &featureError{code: kerr.InvalidRequest.Code, msg: "Feature " + u.Feature + " is named more than once."}
		}
		typ := int(u.UpgradeType)
		if version == 0 {
			typ = upgradeTypeUpgrade
			if u.AllowDowngrade {
				typ = upgradeTypeSafeDowngrade
			}
		}
		f, ok := byName[u.Feature]
		switch {
		case !ok:
			return nil, invalidUpdate(u.Feature, u.MaxVersionLevel, "The controller does not support the given feature.")
		case typ < upgradeTypeUpgrade || typ > upgradeTypeUnsafe:
			return nil, invalidUpdate(u.Feature, u.MaxVersionLevel, "The controller does not support the given upgrade type.")
		case u.MaxVersionLevel < 0:
			return nil, invalidUpdate(u.Feature, u.MaxVersionLevel, "The upper value for the new range cannot be less than 0.")
		case u.MaxVersionLevel < f.MinLevel || u.MaxVersionLevel > f.MaxLevel:
			return nil, invalidUpdate(u.Feature, u.MaxVersionLevel, fmt.Sprintf("This node only supports versions %d-%d.", f.MinLevel, f.MaxLevel))
		case u.MaxVersionLevel < f.Finalized && typ == upgradeTypeUpgrade:
			return nil, invalidUpdate(u.Feature, u.MaxVersionLevel,
				"Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		}
		next[u.Feature] = u.MaxVersionLevel
	}
	return next, nil
}

func (h *Handlers) handleUpdateFeatures(ctx context.Context, req *kafka.Request, reg *kafka.Registry, f *controlplane.Features) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.UpdateFeaturesRequest)
	resp := r.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	var ferr *featureError
	if !h.authz.Authorize(req, acl.OpAlter, acl.Cluster) {
		ferr = &featureError{code: kerr.ClusterAuthorizationFailed.Code, msg: "Alter on the cluster is needed"}
	}
	var levels map[string]int16
	if ferr == nil {
		features, _ := reg.Features()
		levels, ferr = checkFeatureUpdates(req.Version, r.FeatureUpdates, features)
	}
	if ferr == nil && !(req.Version >= 1 && r.ValidateOnly) && len(levels) > 0 {
		err := f.Update(ctx, func(cur map[string]int16) (map[string]int16, error) {
			for name, l := range levels {
				cur[name] = l
			}
			return cur, nil
		})
		if err != nil {
			h.logger.Warn("UpdateFeatures: writing the finalized levels failed", "err", err)
			ferr = &featureError{code: kerr.RequestTimedOut.Code, msg: err.Error()}
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr.code = kerr.UnknownServerError.Code
			}
		}
	}
	if ferr != nil {
		resp.ErrorCode, resp.ErrorMessage = ferr.code, &ferr.msg
	}
	if req.Version < 2 {
		for _, u := range r.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			if ferr != nil {
				res.ErrorCode, res.ErrorMessage = ferr.code, &ferr.msg
			}
			resp.Results = append(resp.Results, res)
		}
	}
	return kafka.Reply{Response: resp}, nil
}
