package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/ingest"
)

// adminErrorCode maps control-plane and config errors to Kafka codes, and
// everything else through ingest.ErrorCode.
func adminErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, controlplane.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, controlplane.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, controlplane.ErrInvalidTopicName):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, controlplane.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, controlplane.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, controlplane.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, controlplane.ErrNoReassignmentInProgress):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, config.ErrInvalidConfig), errors.Is(err, config.ErrUnknownConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, controlplane.ErrConflict), errors.Is(err, controlplane.ErrClosed):
		return kerr.NotController.Code
	}
	return ingest.ErrorCode(err)
}

func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
