package txntest

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestListTransactionsPattern: ListTransactions v2's TransactionalIdPattern
// (KIP-1152, kafka-transactions.sh list --transactional-id-pattern) lists
// the ids the regular expression matches as a whole, with the other
// filters; an empty pattern lists every id; one that does not compile is
// INVALID_REGULAR_EXPRESSION. Before v2 was served the node answered v1,
// which has no pattern: every id.
func TestListTransactionsPattern(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 60*time.Second)
	for _, id := range []string{"app-a", "app-b", "other-app"} {
		if r := initPID(t, ctx, cl, id, -1, -1); r.ErrorCode != 0 {
			t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	list := func(pattern *string, states ...string) (int16, []string) {
		t.Helper()
		req := kmsg.NewPtrListTransactionsRequest()
		req.TransactionalIDPattern, req.StateFilters = pattern, states
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != 2 {
			t.Fatalf("answered at v%d, want 2", resp.Version)
		}
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		return resp.ErrorCode, ids
	}
	for _, c := range []struct {
		pattern *string
		states  []string
		code    int16
		want    []string
	}{
		{kmsg.StringPtr("app-.*"), nil, 0, []string{"app-a", "app-b"}},
		{kmsg.StringPtr("app"), nil, 0, nil}, // a whole-id match, not a search
		{kmsg.StringPtr(".*app"), nil, 0, []string{"other-app"}},
		{kmsg.StringPtr("app-[ab]"), []string{"Ongoing"}, 0, nil}, // with the state filter: none is ongoing
		{kmsg.StringPtr("app-[ab]"), []string{"Empty"}, 0, []string{"app-a", "app-b"}},
		{kmsg.StringPtr(""), nil, 0, []string{"app-a", "app-b", "other-app"}},
		{nil, nil, 0, []string{"app-a", "app-b", "other-app"}},
		{kmsg.StringPtr("app-("), nil, kerr.InvalidRegularExpression.Code, nil},
	} {
		code, ids := list(c.pattern, c.states...)
		if code != c.code || !slices.Equal(ids, c.want) {
			p := "<null>"
			if c.pattern != nil {
				p = *c.pattern
			}
			t.Errorf("pattern %q, states %v: %v %q, want %v %q", p, c.states, kerr.ErrorForCode(code), ids, kerr.ErrorForCode(c.code), c.want)
		}
	}
}
