package txn

import (
	"context"
	"time"

	"github.com/shale-io/shale/partition"
)

// ReplicaMarkers is the MarkerLog of a node: its local leader replicas.
type ReplicaMarkers struct {
	Leaders partition.Leaders
	// CommitTimeout bounds the wait for a marker's replication (default
	// 5 s); the coordinator retries a marker that timed out.
	CommitTimeout time.Duration
}

// AppendMarker implements MarkerLog.
func (rm ReplicaMarkers) AppendMarker(ctx context.Context, tp TopicPartition, m Marker) error {
	rep, err := rm.Leaders.Leader(tp.Topic, tp.Partition)
	if err != nil {
		return err
	}
	res, err := rep.AppendTxnMarker(partition.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit, TransactionVersion: m.TransactionVersion})
	if err != nil {
		return err
	}
	timeout := rm.CommitTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return rep.WaitCommitted(wctx, res.LastOffset, res.LeaderEpoch)
}
