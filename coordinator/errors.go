package coordinator

import "errors"

// The errors every coordinator on the runtime answers with; each
// coordinator translates them to Kafka's codes at its protocol edge.
var (
	// ErrNotCoordinator: this node does not lead the key's internal-topic
	// partition, or lost it during the request (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("coordinator: not the coordinator")
	// ErrLoadInProgress: the partition is being read
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("coordinator: load in progress")
	// ErrCoordinatorNotAvailable: the internal topic has no leader yet,
	// could not be created, or a write was not replicated in time
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("coordinator: not available")
	// ErrClosed: the coordinator is closed (NOT_COORDINATOR to clients,
	// who look for the coordinator again).
	ErrClosed = errors.New("coordinator: closed")
)
