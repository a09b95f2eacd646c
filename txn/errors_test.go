package txn

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/partition"
)

// TestErrorCodes pins the codes of the transaction coordinator's errors,
// the coordinator runtime's among them, wrapped as the coordinator wraps
// them.
func TestErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrNotCoordinator, kerr.NotCoordinator},
		{ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
		{ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{ErrClosed, kerr.NotCoordinator},
		{fmt.Errorf("%w: aborting the open transaction of %q first", ErrConcurrentTransactions, "tx"), kerr.ConcurrentTransactions},
		{ErrProducerFenced, kerr.ProducerFenced},
		{ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{ErrInvalidTxnState, kerr.InvalidTxnState},
		{ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
		{ErrNotFound, kerr.TransactionalIDNotFound},
		{ErrInvalidRequest, kerr.InvalidRequest},
		// A failed append or a lost leadership: the client looks for the
		// coordinator again; a write not replicated in time is retried.
		{fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, StateTopic, 3, partition.ErrDiskFull), kerr.NotCoordinator},
		{fmt.Errorf("%w: %w", ErrNotCoordinator, partition.ErrNotLeader), kerr.NotCoordinator},
		{fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, partition.ErrNotEnoughReplicas), kerr.CoordinatorNotAvailable},
		// Below the coordinator, the node's table.
		{partition.ErrNotLeader, kerr.NotLeaderForPartition},
	} {
		if got := ErrorCode(c.err); got != c.want.Code {
			t.Errorf("ErrorCode(%v) = %v, want %v", c.err, kerr.ErrorForCode(got), c.want)
		}
	}
}
