package txn

// DescribeTransactions (key 65), version 0 (KIP-664).
//
// Per transactional id: its state (Kafka's names: Empty, Ongoing,
// PrepareCommit, ...), timeout, the start of its ongoing transaction (-1
// when none), producer id and epoch and the partitions of the
// transaction. NOT_COORDINATOR when this node does not lead the id's
// partition, COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND.
//
// With an authorizer each transactional id needs Describe
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and only the partitions of topics
// the principal may Describe are listed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleDescribeTransactions(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		if !c.cfg.Authorizer.Authorize(req, acl.OpDescribe, acl.TransactionalID(id)) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		m, err := c.describe(id)
		if err != nil {
			st.ErrorCode = ErrorCode(err)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = m.state.String(), m.timeoutMs, m.start
		st.ProducerID, st.ProducerEpoch = m.producerID, m.epoch
		for _, tp := range m.sortedPartitions() {
			if !c.cfg.Authorizer.Permits(req, acl.OpDescribe, acl.Topic(tp.Topic)) {
				continue
			}
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			t := &st.Topics[len(st.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return kafka.Reply{Response: resp}, nil
}

// describe returns id's state; the result must not be modified.
func (c *Coordinator) describe(id string) (*txnMeta, error) {
	if id == "" {
		return nil, ErrNotFound
	}
	sh, err := c.lookup(id)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.mu.txns[id]
	if m == nil {
		return nil, ErrNotFound
	}
	return m, nil
}
