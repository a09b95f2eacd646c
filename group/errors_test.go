package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/partition"
)

// TestErrorCodes pins the codes of the group coordinator's errors, the
// coordinator runtime's among them, wrapped as the coordinator wraps them.
func TestErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrNotCoordinator, kerr.NotCoordinator},
		{ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
		{ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{ErrClosed, kerr.NotCoordinator},
		{fmt.Errorf("%w: %q", ErrNotShareGroup, "g"), kerr.GroupIDNotFound},
		// A failed append: the client looks for the coordinator again.
		{fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, OffsetsTopic, 3, partition.ErrDiskFull), kerr.NotCoordinator},
		{fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, OffsetsTopic, partition.ErrNotEnoughReplicas), kerr.CoordinatorNotAvailable},
		// Below the coordinator, the node's table.
		{partition.ErrNotLeader, kerr.NotLeaderForPartition},
	} {
		if got := errorCode(c.err); got != c.want.Code {
			t.Errorf("errorCode(%v) = %v, want %v", c.err, kerr.ErrorForCode(got), c.want)
		}
	}
}
