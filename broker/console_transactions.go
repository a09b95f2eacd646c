package broker

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/txn"
)

// consoleTransactions answers adminapi.ConsoleTransactionsPath: a page of
// the transactional ids this node coordinates and the transactions open in
// the partitions it leads. A coordinator partition still loading is 503.
func (n *Node) consoleTransactions(r *http.Request) (any, error) {
	limit, err := consoleLimit(r)
	if err != nil {
		return nil, err
	}
	out := adminapi.ConsoleTransactions{NodeID: n.cfg.NodeID, Transactions: []adminapi.ConsoleTransaction{},
		MaxTimeoutMs: n.cfg.TransactionMaxTimeout.Milliseconds(), Open: []adminapi.ConsoleOpenTransaction{}}
	if n.coords == nil || n.coords.txns == nil {
		return nil, errors.New("the transaction coordinator is not running")
	}
	all, err := n.coords.txns.Transactions()
	if err != nil {
		return nil, fmt.Errorf("transactions: %w", err)
	}
	cursor := r.URL.Query().Get("cursor")
	for _, s := range all { // sorted by id
		out.Total++
		if s.State == "Ongoing" {
			out.Ongoing++
		}
		if cursor != "" && s.ID <= cursor {
			continue
		}
		if len(out.Transactions) == limit {
			out.Next = out.Transactions[limit-1].ID
			continue
		}
		out.Transactions = append(out.Transactions, consoleTransaction(s))
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

func consoleTransaction(s txn.Summary) adminapi.ConsoleTransaction {
	t := adminapi.ConsoleTransaction{ID: s.ID, ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch, State: s.State, TimeoutMs: s.TimeoutMs,
		StartMs: s.StartMs, LastUpdateMs: s.LastUpdateMs, Partitions: make([]string, 0, len(s.Partitions))}
	for _, tp := range s.Partitions {
		t.Partitions = append(t.Partitions, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
	}
	return t
}
