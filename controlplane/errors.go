package controlplane

import "errors"

// Sentinel errors. Store methods wrap them with %w and detail; test with
// errors.Is. The protocol edge translates them to Kafka error codes.
var (
	// ErrTopicExists: CreateTopic for a name that already exists
	// (TOPIC_ALREADY_EXISTS).
	ErrTopicExists = errors.New("controlplane: topic already exists")
	// ErrUnknownTopic: the named topic does not exist
	// (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownTopic = errors.New("controlplane: unknown topic")
	// ErrInvalidTopicName: the name breaks Kafka's topic name rules
	// (INVALID_TOPIC_EXCEPTION).
	ErrInvalidTopicName = errors.New("controlplane: invalid topic name")
	// ErrInvalidReplicationFactor: the replication factor is < 1 or larger
	// than the number of live brokers (INVALID_REPLICATION_FACTOR).
	ErrInvalidReplicationFactor = errors.New("controlplane: invalid replication factor")
	// ErrInvalidPartitions: a partition count < 1, or a CreatePartitions
	// count not above the current one (INVALID_PARTITIONS).
	ErrInvalidPartitions = errors.New("controlplane: invalid partition count")
	// ErrInvalidPartitionState: an UpdatePartition argument that is not a
	// consistent partition state (no revision, leader not a replica, ...).
	ErrInvalidPartitionState = errors.New("controlplane: invalid partition state")
	// ErrConflict: a compare-and-set lost because someone else wrote first.
	// Re-read and retry.
	ErrConflict = errors.New("controlplane: conflicting write")
	// ErrInvalidBroker: a Broker registration with a bad id, host or port.
	ErrInvalidBroker = errors.New("controlplane: invalid broker")
	// ErrBrokerIDInUse: another live process holds this node id's
	// registration (DUPLICATE_BROKER_REGISTRATION). It frees up once that
	// process stops its keepalive and the key expires.
	ErrBrokerIDInUse = errors.New("controlplane: broker id registered by another process")
	// ErrBrokerNotRegistered: UnregisterBroker of a broker id that is not
	// registered (BROKER_ID_NOT_REGISTERED).
	ErrBrokerNotRegistered = errors.New("controlplane: broker id not registered")
	// ErrBrokerNotFenced: UnregisterBroker of a broker that has a live
	// session (INVALID_REQUEST): only a stopped broker is unregistered.
	ErrBrokerNotFenced = errors.New("controlplane: broker is live")
	// ErrInvalidReplicaAssignment: a replica list that is empty, names a
	// broker twice or an unregistered broker, or a reassignment that cannot
	// be reverted cleanly (INVALID_REPLICA_ASSIGNMENT).
	ErrInvalidReplicaAssignment = errors.New("controlplane: invalid replica assignment")
	// ErrNoReassignmentInProgress: cancelling a reassignment of a partition
	// that has none (NO_REASSIGNMENT_IN_PROGRESS).
	ErrNoReassignmentInProgress = errors.New("controlplane: no reassignment in progress")
	// ErrControllerFenced: a controller's write to a partition that a
	// controller with a newer lease already wrote: it is deposed.
	ErrControllerFenced = errors.New("controlplane: controller fenced by a newer one")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("controlplane: store closed")
)
