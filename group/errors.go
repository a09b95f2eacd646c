package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
)

// Errors of the coordinator, translated to Kafka codes by errorCode. The
// first four are the coordinator runtime's, shared with the transaction
// coordinator.
var (
	// ErrNotCoordinator: this node does not lead the group's offsets
	// partition (NOT_COORDINATOR).
	ErrNotCoordinator = coordinator.ErrNotCoordinator
	// ErrLoadInProgress: the group's offsets partition is being read
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = coordinator.ErrLoadInProgress
	// ErrCoordinatorNotAvailable: the offsets topic has no leader yet, or
	// could not be created (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = coordinator.ErrCoordinatorNotAvailable
	// ErrClosed: the coordinator is closed (NOT_COORDINATOR to clients, who
	// look for the coordinator again).
	ErrClosed = coordinator.ErrClosed
	// ErrCorruptRecord: a __consumer_offsets record that does not decode.
	ErrCorruptRecord = errors.New("group: corrupt __consumer_offsets record")
	// ErrNotShareGroup: share group records for a classic or consumer
	// group (GROUP_ID_NOT_FOUND, as Kafka answers a share group heartbeat
	// for a group of another type).
	ErrNotShareGroup = errors.New("group: not a share group")
)

// codes is the coordinators' error table (the runtime's errors over the
// node's) with the group coordinator's own in front.
var codes = kafkaerr.Coordinators.With(
	kafka.Translation{Err: ErrNotShareGroup, Kafka: kerr.GroupIDNotFound},
)

// errorCode translates an error to a Kafka error code.
func errorCode(err error) int16 { return codes.Code(err) }
