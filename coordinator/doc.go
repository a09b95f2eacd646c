// Package coordinator is the runtime Kafka's coordinators share (its
// CoordinatorRuntime, CoordinatorShard and CoordinatorLoader): Runtime
// keeps one Shard per partition of a coordinator's internal topic that
// this node leads, keyed by leader epoch, loads it eagerly when the
// leadership arrives (replaying records and control markers to the log
// end), unloads it when the leadership ends, tracks the coordinator's
// goroutines and answers with one set of errors (ErrNotCoordinator,
// ErrLoadInProgress, ErrCoordinatorNotAvailable, ErrClosed);
// WaitCommitted is the append's wait for the commit; Replay is the read of
// a partition, batch by batch, that each shard's Load replays. Each
// coordinator keeps its own state machine and record codecs.
//
// It also holds what the coordinators share besides, below the group
// coordinator (package group) and the transaction coordinator (package
// txn), which are siblings and never import each other: the key-to-
// partition hash of their internal topics (PartitionFor, Java's
// String.hashCode), the names of those topics, the view of the cluster
// a coordinator needs (Cluster, Broker, TopicShape) and the reader of
// their records' flexible values (RecordReader).
//
// It sits above partition (the replicas of the internal topics) and below
// the coordinators; it knows no Kafka API.
package coordinator
