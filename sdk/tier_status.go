package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/shale-io/shale/adminapi"
)

// TierStatusPath is the admin HTTP path of a node's tier status.
const TierStatusPath = adminapi.TierStatusPath

// TierStatus is one node's tier status, and TierPartitionStatus one of its
// local partitions: the JSON of the node's /v1/tier/status, documented
// field by field in package adminapi.
type (
	TierStatus          = adminapi.TierStatus
	TierPartitionStatus = adminapi.TierPartitionStatus
)

// TierStatus reads the tier status of the node at WithAdminURL, restricted
// to topic unless topic is "". A node reports only the partitions it holds.
// A status other than 200 is an ErrAdminHTTP; a body that is not a tier
// status is an error too.
func (a *Admin) TierStatus(ctx context.Context, topic string) (TierStatus, error) {
	return adminGet(ctx, a, "tier status", topic, adminapi.Client.TierStatus)
}

// adminGet runs get, one of adminapi.Client's methods, against the node at
// WithAdminURL; what names the call in errors. A status other than 200 is
// wrapped in ErrAdminHTTP.
func adminGet[T any](ctx context.Context, a *Admin, what, topic string,
	get func(adminapi.Client, context.Context, string, string) (T, error)) (T, error) {
	var zero T
	if a.closed.Load() {
		return zero, ErrClosed
	}
	if a.adminURL == "" {
		return zero, ErrNoAdminURL
	}
	v, err := get(adminapi.Client{HTTP: a.http, Token: a.adminToken}, ctx, a.adminURL, topic)
	switch {
	case errors.Is(err, adminapi.ErrHTTPStatus):
		return zero, fmt.Errorf("%w: %s: %w", ErrAdminHTTP, what, err)
	case err != nil:
		return zero, fmt.Errorf("sdk: %s: %w", what, err)
	}
	return v, nil
}
