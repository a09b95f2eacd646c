package txn

import "sort"

// Summary is one transactional id a coordinator holds, for the admin
// API's listing (the web console): DescribeTransactions' fields.
type Summary struct {
	ID            string
	ProducerID    int64
	ProducerEpoch int16
	// State is Kafka's name (Ongoing, PrepareCommit, CompleteAbort, ...).
	State     string
	TimeoutMs int32
	// StartMs is the open transaction's start (unix ms), -1 when none;
	// LastUpdateMs the last change of the id's state.
	StartMs      int64
	LastUpdateMs int64
	// Partitions are those the transaction wrote to, by topic and number.
	Partitions []TopicPartition
}

// Transactions returns every transactional id of the __transaction_state
// partitions this node leads, sorted by id, or ErrLoadInProgress while one
// of them is loading (as ListTransactions answers). The caller owns the
// slice.
func (c *Coordinator) Transactions() ([]Summary, error) {
	shards, err := c.listable()
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, sh := range shards {
		sh.mu.Lock()
		for id, m := range sh.mu.txns {
			s := Summary{ID: id, ProducerID: m.producerID, ProducerEpoch: m.epoch, State: m.state.String(), TimeoutMs: m.timeoutMs,
				StartMs: m.start, LastUpdateMs: m.lastUpdate, Partitions: make([]TopicPartition, 0, len(m.partitions))}
			for tp := range m.partitions {
				s.Partitions = append(s.Partitions, tp)
			}
			sort.Slice(s.Partitions, func(i, j int) bool {
				a, b := s.Partitions[i], s.Partitions[j]
				return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
			})
			out = append(out, s)
		}
		sh.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
