package broker

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/txn"
)

// consoleTransactions answers adminapi.ConsoleTransactionsPath: a page of
// the cluster's transactional ids, listed by every broker
// (ListTransactions) and the page's described by their coordinators
// (DescribeTransactions) through the node's inter-broker client, and the
// transactions open in the partitions this node leads.
func (n *Node) consoleTransactions(r *http.Request) (any, error) {
	limit, err := consoleLimit(r)
	if err != nil {
		return nil, err
	}
	out := adminapi.ConsoleTransactions{NodeID: n.cfg.NodeID, Transactions: []adminapi.ConsoleTransaction{},
		MaxTimeoutMs: n.cfg.TransactionMaxTimeout.Milliseconds(), Open: []adminapi.ConsoleOpenTransaction{}}
	a, ctx, done, err := n.consoleAdmin(r.Context())
	if err != nil {
		return nil, err
	}
	defer done()
	listed, err := a.Kadm().ListTransactions(ctx, nil, nil)
	if out.ListErrors, err = partialFailures(err); err != nil {
		return nil, fmt.Errorf("transactions: %w", err)
	}
	all := listed.Sorted() // by id
	out.Total = len(all)
	for _, l := range all {
		if l.State == "Ongoing" {
			out.Ongoing++
		}
	}
	page, next := pageAfter(all, func(l kadm.ListedTransaction) string { return l.TxnID }, r.URL.Query().Get("cursor"), limit)
	out.Next = next
	if len(page) > 0 {
		ids := make([]string, len(page))
		for i, l := range page {
			ids[i] = l.TxnID
		}
		described, err := a.Kadm().DescribeTransactions(ctx, ids...)
		if err != nil && len(described) == 0 {
			return nil, fmt.Errorf("describing transactions: %w", err)
		}
		local := map[string]txn.Summary{} // the ids coordinated here, with their last update
		if n.coords != nil && n.coords.txns != nil {
			if all, err := n.coords.txns.Transactions(); err == nil {
				for _, s := range all {
					local[s.ID] = s
				}
			}
		}
		for _, l := range page {
			t := adminapi.ConsoleTransaction{ID: l.TxnID, Coordinator: l.Coordinator, ProducerID: l.ProducerID, ProducerEpoch: -1,
				State: l.State, StartMs: -1, LastUpdateMs: -1, Partitions: []string{}}
			if d, ok := described[l.TxnID]; ok && d.Err == nil {
				t.ProducerID, t.ProducerEpoch, t.State, t.TimeoutMs = d.ProducerID, d.ProducerEpoch, d.State, d.TimeoutMillis
				if d.StartTimestamp > 0 {
					t.StartMs = d.StartTimestamp
				}
				for _, tps := range d.Topics.Sorted() {
					for _, p := range tps.Partitions {
						t.Partitions = append(t.Partitions, fmt.Sprintf("%s-%d", tps.Topic, p))
					}
				}
			}
			if s, ok := local[l.TxnID]; ok {
				t.LastUpdateMs = s.LastUpdateMs
			}
			out.Transactions = append(out.Transactions, t)
		}
	}
	now := time.Now().UnixMilli()
	for _, rep := range n.replicas.All() {
		if !rep.IsLeader() {
			continue
		}
		for _, p := range rep.Producers() {
			if p.CurrentTxnStartOffset < 0 {
				continue
			}
			out.OpenTotal++
			out.Open = append(out.Open, adminapi.ConsoleOpenTransaction{Topic: rep.Topic(), Partition: rep.Partition(), ProducerID: p.ProducerID,
				ProducerEpoch: p.ProducerEpoch, StartOffset: p.CurrentTxnStartOffset, LastTimestamp: p.LastTimestamp,
				Hanging: p.LastTimestamp >= 0 && now-p.LastTimestamp > out.MaxTimeoutMs})
		}
	}
	slices.SortFunc(out.Open, func(a, b adminapi.ConsoleOpenTransaction) int {
		return int(min(max(a.LastTimestamp-b.LastTimestamp, -1), 1))
	})
	if len(out.Open) > adminapi.ConsoleMaxLimit {
		out.Open = out.Open[:adminapi.ConsoleMaxLimit]
	}
	return out, nil
}
