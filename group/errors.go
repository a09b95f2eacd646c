package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of the coordinator, translated to Kafka codes by errorCode.
var (
	// ErrNotCoordinator: this node does not lead the group's offsets
	// partition (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("group: not the coordinator")
	// ErrLoadInProgress: the group's offsets partition is being read
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("group: coordinator load in progress")
	// ErrCoordinatorNotAvailable: the offsets topic has no leader yet, or
	// could not be created (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("group: coordinator not available")
	// ErrClosed: the coordinator is closed (NOT_COORDINATOR to clients, who
	// look for the coordinator again).
	ErrClosed = errors.New("group: coordinator closed")
	// ErrCorruptRecord: a __consumer_offsets record that does not decode.
	ErrCorruptRecord = errors.New("group: corrupt __consumer_offsets record")
)

// errorCode translates an error to a Kafka error code.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrLoadInProgress):
		return kerr.CoordinatorLoadInProgress.Code
	case errors.Is(err, ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, ErrNotCoordinator), errors.Is(err, ErrClosed):
		return kerr.NotCoordinator.Code
	}
	return kerr.UnknownServerError.Code
}
