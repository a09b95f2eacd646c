// Package txn is the transaction coordinator (KIP-98, KIP-360, KIP-447,
// KIP-664, KIP-890 parts 1 and 2): InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the marker sender and the
// admin APIs DescribeTransactions and ListTransactions, plus the partition
// leader's side of WriteTxnMarkers and DescribeProducers.
//
// The coordinator of a transactional id is the leader of the
// __transaction_state partition PartitionFor(id). Each transaction's state
// (producer id and epoch, timeout, state, partitions, timestamps) is a
// record in that partition in Kafka's own format (records.go), appended
// with acks=all; the in-memory state changes only once the record is
// replicated. A node that becomes the leader of a __transaction_state
// partition reads it to the log end before it answers for its ids
// (COORDINATOR_LOAD_IN_PROGRESS meanwhile), and resumes the markers of
// every transaction it finds in PrepareCommit or PrepareAbort.
//
// Transactions v2 (KIP-890 part 2, the transaction.version feature this
// package advertises) follow each request's version as Kafka does: an
// EndTxn v5 bumps the epoch at every end (state.go's endV2), and the
// partition leaders (and the group coordinator for TxnOffsetCommit v5)
// add partitions for the client through AddPartitionsToTxn v5 (Verifier).
//
// Ending a transaction is Kafka's two phases: PrepareCommit (or
// PrepareAbort) is written and answered, then the coordinator sends
// WriteTxnMarkers to the leader of every partition of the transaction,
// retrying until each has the marker, then writes CompleteCommit (or
// CompleteAbort). Requests for the id meanwhile get CONCURRENT_TRANSACTIONS.
//
// State per __transaction_state partition is guarded by its shard's mutex;
// a write in flight marks the transaction pending, which is how
// concurrent requests are refused rather than queued, as in Kafka.
//
// txn sits above partition (the state partitions' replicas), group (the
// offsets partition of AddOffsetsToTxn) and kafka (the registry); package
// admin wires it into a node.
package txn
