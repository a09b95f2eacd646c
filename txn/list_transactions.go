package txn

// ListTransactions (key 66), versions 0-2 (KIP-664).
//
// The transactional ids of every __transaction_state partition this node
// leads (each loaded when this node became its leader), filtered by state (Kafka's names; an unknown one
// is echoed in UnknownStateFilters) and producer id.  v1: a duration
// filter (KIP-994): only transactions ongoing for longer than it. v2:
// TransactionalIdPattern (KIP-1152): when set and not empty, only the ids
// that the regular expression matches as a whole (Java's Matcher.matches,
// which Kafka uses; Go's RE2 syntax, which shares Java's common subset);
// a pattern that does not compile is INVALID_REGULAR_EXPRESSION with no
// transactions.
// While one of those partitions is still loading, the answer is
// COORDINATOR_LOAD_IN_PROGRESS with no transactions, as Kafka's
// listTransactionStates answers. A caller lists the whole cluster by
// asking every broker.
//
// With an authorizer only the transactional ids the principal may Describe
// are listed (no error).

import (
	"context"
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleListTransactions(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[string]bool{}
	for _, s := range r.StateFilters {
		if _, err := kmsg.ParseTransactionState(s); err != nil {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
			continue
		}
		states[s] = true
	}
	if len(r.StateFilters) > 0 && len(states) == 0 {
		return kafka.Reply{Response: resp}, nil
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && r.TransactionalIDPattern != nil && *r.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(`^(?:` + *r.TransactionalIDPattern + `)$`); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return kafka.Reply{Response: resp}, nil
		}
	}
	pids := map[int64]bool{}
	for _, p := range r.ProducerIDFilters {
		pids[p] = true
	}
	shards, err := c.listable()
	if err != nil {
		resp.ErrorCode = ErrorCode(err)
		return kafka.Reply{Response: resp}, nil
	}
	now := c.cfg.Now().UnixMilli()
	for _, sh := range shards {
		sh.mu.Lock()
		for id, m := range sh.mu.txns {
			name := m.state.String()
			switch {
			case len(states) > 0 && !states[name]:
				continue
			case len(pids) > 0 && !pids[m.producerID]:
				continue
			case pattern != nil && !pattern.MatchString(id):
				continue
			case req.Version >= 1 && r.DurationFilterMillis >= 0 &&
				(m.state != kmsg.TransactionStateOngoing || m.start < 0 || now-m.start < r.DurationFilterMillis):
				continue
			}
			if !c.cfg.Authorizer.Permits(req, acl.OpDescribe, acl.TransactionalID(id)) {
				continue
			}
			ts := kmsg.NewListTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ProducerID, ts.TransactionState = id, m.producerID, name
			resp.TransactionStates = append(resp.TransactionStates, ts)
		}
		sh.mu.Unlock()
	}
	sort.Slice(resp.TransactionStates, func(i, j int) bool {
		return resp.TransactionStates[i].TransactionalID < resp.TransactionStates[j].TransactionalID
	})
	return kafka.Reply{Response: resp}, nil
}
