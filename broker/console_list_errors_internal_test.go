package broker

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestPartialFailures: the console's group and transaction lists show
// the brokers whose share of a list failed when others answered, and
// fail as a whole when none did or the error is not per broker.
func TestPartialFailures(t *testing.T) {
	down := errors.New("connection refused")
	some := &kadm.ShardErrors{Name: "ListGroups", Errs: []kadm.ShardError{
		{Err: down, Broker: kadm.BrokerDetail{NodeID: 2}},
		{Err: down, Broker: kadm.BrokerDetail{NodeID: 3}},
	}}
	failed, err := partialFailures(fmt.Errorf("listing: %w", some))
	if err != nil || !slices.Equal(failed, []string{"node 2: connection refused", "node 3: connection refused"}) {
		t.Fatalf("some brokers failed: %q %v", failed, err)
	}
	all := &kadm.ShardErrors{Name: "ListGroups", AllFailed: true, Errs: some.Errs}
	if failed, err := partialFailures(all); failed != nil || !errors.Is(err, all) {
		t.Fatalf("every broker failed: %q %v", failed, err)
	}
	if failed, err := partialFailures(down); failed != nil || err != down {
		t.Fatalf("a whole failure: %q %v", failed, err)
	}
	if failed, err := partialFailures(nil); failed != nil || err != nil {
		t.Fatalf("no failure: %q %v", failed, err)
	}
}
