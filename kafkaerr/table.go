// Package kafkaerr is the one table from Shale's errors to the Kafka error
// codes a client gets. Every API handler (ingest, fetch, group, the admin
// APIs) translates through it when it fills a response, and nowhere else:
// below the handlers errors stay typed values, wrapped with %w.
//
// The rules (first match wins, what unknown errors become, which codes are
// retriable) are kafka.ErrorTable's; this package lists the translations of
// the sentinel errors of the packages below the handlers. It sits above
// segment, partition, tiering/coldread, infra, controlplane and the
// coordinator runtime, and below the handler packages; a handler package
// with errors of its own extends Table with kafka.ErrorTable.With, and a
// coordinator on the runtime extends Coordinators.
package kafkaerr

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering/coldread"
)

// Table is the node's translation of errors to Kafka error codes. Order
// matters only where one error wraps two sentinels.
var Table = kafka.NewErrorTable(
	// The client's record batch.
	kafka.Translation{Err: batch.ErrCRC, Kafka: kerr.CorruptMessage},
	kafka.Translation{Err: batch.ErrCorrupt, Kafka: kerr.CorruptMessage},
	kafka.Translation{Err: batch.ErrMagic, Kafka: kerr.CorruptMessage},
	kafka.Translation{Err: batch.ErrTooLarge, Kafka: kerr.MessageTooLarge},
	// A batch larger than segment.bytes: Kafka's RecordBatchTooLargeException
	// (UnifiedLog.append), RECORD_LIST_TOO_LARGE.
	kafka.Translation{Err: segment.ErrTooLarge, Kafka: kerr.RecordListTooLarge},
	kafka.Translation{Err: batch.ErrRecordCount, Kafka: kerr.InvalidRecord},
	kafka.Translation{Err: batch.ErrInvalidRecord, Kafka: kerr.InvalidRecord},
	kafka.Translation{Err: batch.ErrCodec, Kafka: kerr.InvalidRecord},
	kafka.Translation{Err: partition.ErrOneBatch, Kafka: kerr.InvalidRecord},
	kafka.Translation{Err: partition.ErrControlBatch, Kafka: kerr.InvalidRecord},
	kafka.Translation{Err: partition.ErrInvalidTimestamp, Kafka: kerr.InvalidTimestamp},

	// Idempotent producers.
	kafka.Translation{Err: partition.ErrOutOfOrderSequence, Kafka: kerr.OutOfOrderSequenceNumber},
	kafka.Translation{Err: partition.ErrProducerFenced, Kafka: kerr.InvalidProducerEpoch},
	kafka.Translation{Err: partition.ErrInvalidTxnState, Kafka: kerr.InvalidTxnState},
	kafka.Translation{Err: partition.ErrCoordinatorFenced, Kafka: kerr.TransactionCoordinatorFenced},

	// Leadership and replication: the client refreshes its metadata.
	kafka.Translation{Err: partition.ErrNotLeader, Kafka: kerr.NotLeaderForPartition},
	kafka.Translation{Err: partition.ErrUnknownReplica, Kafka: kerr.NotLeaderForPartition},
	kafka.Translation{Err: partition.ErrClosed, Kafka: kerr.NotLeaderForPartition},
	kafka.Translation{Err: segment.ErrClosed, Kafka: kerr.NotLeaderForPartition},
	kafka.Translation{Err: partition.ErrUnknownTopicOrPartition, Kafka: kerr.UnknownTopicOrPartition},
	kafka.Translation{Err: partition.ErrNotEnoughReplicas, Kafka: kerr.NotEnoughReplicas},
	kafka.Translation{Err: partition.ErrNotEnoughReplicasAfterAppend, Kafka: kerr.NotEnoughReplicasAfterAppend},
	kafka.Translation{Err: segment.ErrOffsetOutOfRange, Kafka: kerr.OffsetOutOfRange},

	// Storage, local and remote: retriable, as tiering and retention free
	// space and the bucket comes back.
	kafka.Translation{Err: partition.ErrDiskFull, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: partition.ErrBadSnapshot, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: segment.ErrCorruption, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: segment.ErrSyncFailed, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: coldread.ErrRemoteRead, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: coldread.ErrNoRemoteSegment, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: coldread.ErrCorruptIndex, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: coldread.ErrClosed, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: objstore.ErrTransient, Kafka: kerr.KafkaStorageError},
	kafka.Translation{Err: objstore.ErrNotFound, Kafka: kerr.KafkaStorageError},

	// Topics and configs (the admin APIs).
	kafka.Translation{Err: controlplane.ErrTopicExists, Kafka: kerr.TopicAlreadyExists},
	kafka.Translation{Err: controlplane.ErrUnknownTopic, Kafka: kerr.UnknownTopicOrPartition},
	kafka.Translation{Err: controlplane.ErrInvalidTopicName, Kafka: kerr.InvalidTopicException},
	kafka.Translation{Err: controlplane.ErrInvalidReplicationFactor, Kafka: kerr.InvalidReplicationFactor},
	kafka.Translation{Err: controlplane.ErrInvalidPartitions, Kafka: kerr.InvalidPartitions},
	kafka.Translation{Err: controlplane.ErrInvalidReplicaAssignment, Kafka: kerr.InvalidReplicaAssignment},
	kafka.Translation{Err: controlplane.ErrNoReassignmentInProgress, Kafka: kerr.NoReassignmentInProgress},
	kafka.Translation{Err: controlplane.ErrBrokerNotRegistered, Kafka: kerr.BrokerIDNotRegistered},
	kafka.Translation{Err: controlplane.ErrBrokerNotFenced, Kafka: kerr.InvalidRequest},
	kafka.Translation{Err: config.ErrInvalidConfig, Kafka: kerr.InvalidConfig},
	kafka.Translation{Err: config.ErrUnknownConfig, Kafka: kerr.InvalidConfig},
	kafka.Translation{Err: controlplane.ErrConflict, Kafka: kerr.NotController},
	kafka.Translation{Err: controlplane.ErrClosed, Kafka: kerr.NotController},
)

// Code returns Table's Kafka error code for err, 0 for nil.
func Code(err error) int16 { return Table.Code(err) }

// Coordinators is Table with the coordinator runtime's errors in front
// (package coordinator), for the coordinators on the runtime (group, txn)
// to extend with their own: an append that failed below (disk full, too
// large, not leader) is wrapped with coordinator.ErrNotCoordinator, so the
// client looks for the coordinator again, as Kafka's coordinators answer
// their storage errors; a closed coordinator is NOT_COORDINATOR too.
var Coordinators = Table.With(
	kafka.Translation{Err: coordinator.ErrLoadInProgress, Kafka: kerr.CoordinatorLoadInProgress},
	kafka.Translation{Err: coordinator.ErrCoordinatorNotAvailable, Kafka: kerr.CoordinatorNotAvailable},
	kafka.Translation{Err: coordinator.ErrNotCoordinator, Kafka: kerr.NotCoordinator},
	kafka.Translation{Err: coordinator.ErrClosed, Kafka: kerr.NotCoordinator},
)
