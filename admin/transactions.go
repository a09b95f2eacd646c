package admin

import (
	"context"

	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/txn"
)

// registerTxnAPIs builds the transaction coordinator (package txn owns
// its APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
// DescribeTransactions, ListTransactions; InitProducerId is ingest's and
// calls it), has FindCoordinator answer transactional ids with it, and
// serves the partition leader's side: WriteTxnMarkers and
// DescribeProducers.
// Its marker sender dials this node's own inter-broker listener (with the
// inter-broker TLS and SASL) and finds the partition leaders from the
// cluster's metadata.
func (h *Handlers) registerTxnAPIs(reg *kafka.Registry, pids txn.ProducerIDs) {
	h.txnMarkers = txn.NewKafkaMarkers(func() []string { return []string{h.cfg.Advertise} }, h.interBroker.KgoOpts()...)
	h.txns = txn.New(txn.Config{
		Partitions:         h.cfg.TransactionStateLogNumPartitions,
		ReplicationFactor:  h.cfg.TransactionStateLogReplicationFactor,
		MinISR:             h.cfg.TransactionStateLogMinISR,
		TransactionVersion: h.cfg.TransactionVersion,
		MaxTimeout:         h.cfg.TransactionMaxTimeout,
		AbortCheckInterval: h.cfg.TransactionAbortCheckInterval,
		IDExpiration:       h.cfg.TransactionalIDExpiration,
		NodeID:             h.cfg.NodeID,
		Logger:             h.logger,
		Authorizer:         h.authz,

		IDExpirationCheckInterval: h.cfg.TransactionIDExpirationCheckInterval,
	}, h.replicas, txnCluster{groupCluster{h}}, pids, h.txnMarkers)
	h.txns.Register(reg)
	h.groups.SetTransactions(h.txns)
	h.groups.SetTxnPartitionAdder(h.TxnVerifier())
	txn.RegisterWriteTxnMarkers(reg, txn.ReplicaMarkers{Leaders: h.replicas}, h.groups, h.authz)
	txn.RegisterDescribeProducers(reg, h.replicas, h.authz)
}

// TxnVerifier is the partition leader's check of KIP-890 part 1 that
// Produce asks before the first batch of a transaction in a partition.
func (h *Handlers) TxnVerifier() txn.Verifier {
	return txn.Verifier{Client: h.txnMarkers, Coordinator: func(id string) (int32, bool) {
		// The coordinator's own partition count, not the topic's: a topic
		// of another shape (internal_topics.go) must not send the check to
		// a broker that is not the id's coordinator.
		st, ok := h.store.Partition(txn.StateTopic, txn.PartitionFor(id, h.cfg.TransactionStateLogNumPartitions))
		return st.Leader, ok && st.Leader >= 0
	}}
}

// Transactions is the node's transaction coordinator (ingest's
// InitProducerId answers transactional ids with it).
func (h *Handlers) Transactions() *txn.Coordinator { return h.txns }

// StopTransactions stops the transaction coordinator's marker senders and
// its timeout loop, then closes its client. Idempotent.
func (h *Handlers) StopTransactions() {
	h.stopTxns.Do(func() {
		h.txns.Close()
		h.txnMarkers.Close()
	})
}

// txnCluster is the control plane as the transaction coordinator sees it.
type txnCluster struct{ groupCluster }

// Partitions implements txn.Cluster.
func (tc txnCluster) Partitions(topic string) (int32, bool) {
	t, ok := tc.h.store.Topic(topic)
	return t.Partitions, ok
}

// EnsureOffsetsTopic implements txn.Cluster with the group coordinator's
// own creation of __consumer_offsets.
func (tc txnCluster) EnsureOffsetsTopic(ctx context.Context) (int32, error) {
	return tc.h.groups.EnsureOffsetsTopic(ctx)
}
