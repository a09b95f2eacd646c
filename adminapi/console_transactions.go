package adminapi

// ConsoleTransactionsPath: the cluster's transactional ids, whichever node
// coordinates them (a page: ?limit=N&cursor=ID), and the transactions open
// in the partitions the answering node leads, hanging ones marked.
const ConsoleTransactionsPath = "/v1/console/transactions"

// ConsoleTransactions is the body of GET ConsoleTransactionsPath.
type ConsoleTransactions struct {
	NodeID int32 `json:"node_id"`
	// Total counts the cluster's transactional ids (all pages), as
	// ListTransactions of every broker answers; Ongoing those with a
	// transaction open.
	Total        int                  `json:"total"`
	Ongoing      int                  `json:"ongoing"`
	Transactions []ConsoleTransaction `json:"transactions"`
	// Next is the cursor (an id) of the next page, "" after the last.
	Next string `json:"next"`
	// MaxTimeoutMs is the node's transaction_max_timeout: a transaction
	// open in a partition whose producer wrote nothing for longer is
	// hanging (the rule of Kafka's kafka-transactions find-hanging).
	MaxTimeoutMs int64 `json:"max_timeout_ms"`
	// Open are the transactions open in the partitions this node leads,
	// oldest first, at most ConsoleMaxLimit; OpenTotal counts them all.
	Open      []ConsoleOpenTransaction `json:"open"`
	OpenTotal int                      `json:"open_total"`
	// ListErrors names the brokers whose ListTransactions failed: their
	// ids are missing from the list.
	ListErrors []string `json:"list_errors,omitempty"`
}

// ConsoleTransaction is one transactional id's state at its coordinator
// (DescribeTransactions). StartMs is the open transaction's start (unix
// ms), -1 when none; LastUpdateMs is known on the coordinator's own
// console only (-1 elsewhere).
type ConsoleTransaction struct {
	ID            string   `json:"transactional_id"`
	Coordinator   int32    `json:"coordinator"`
	ProducerID    int64    `json:"producer_id"`
	ProducerEpoch int16    `json:"producer_epoch"`
	State         string   `json:"state"`
	TimeoutMs     int32    `json:"timeout_ms"`
	StartMs       int64    `json:"start_ms"`
	LastUpdateMs  int64    `json:"last_update_ms"`
	Partitions    []string `json:"partitions"`
}

// ConsoleOpenTransaction is a transaction open in one partition, as its
// leader's producer state holds it. LastTimestamp is the producer's last
// write there (unix ms, -1 unknown).
type ConsoleOpenTransaction struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
	StartOffset   int64  `json:"start_offset"`
	LastTimestamp int64  `json:"last_timestamp"`
	Hanging       bool   `json:"hanging"`
}
