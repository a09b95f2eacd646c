package replicationtest

import (
	"strings"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// checkEpochs fails the test if two nodes ever logged becoming leader of
// one partition in the same leader epoch. It returns how many such lines
// it read; a "became leader" line it cannot parse is a failure.
func checkEpochs(t *testing.T, nodes []*node) int {
	t.Helper()
	var all []proctest.LeadClaim
	for _, n := range nodes {
		cs, err := proctest.LeadClaims(n.Output(), "became leader", "node")
		if err != nil {
			t.Fatalf("node %d: %v", n.id, err)
		}
		all = append(all, cs...)
	}
	if bad := proctest.EpochConflicts(all); len(bad) > 0 {
		t.Fatalf("two nodes led one partition in the same epoch:\n%s", strings.Join(bad, "\n"))
	}
	return len(all)
}
