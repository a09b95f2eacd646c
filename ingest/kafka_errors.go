package ingest

import (
	"context"
	"errors"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// ErrorCode translates an error of the layers below into the Kafka error
// code a client understands. This is the one place where Shale's sentinel
// errors meet Kafka's codes; every API handler goes through it.
func ErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, batch.ErrCRC), errors.Is(err, batch.ErrCorrupt), errors.Is(err, batch.ErrMagic):
		return kerr.CorruptMessage.Code
	case errors.Is(err, batch.ErrTooLarge), errors.Is(err, segment.ErrTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, batch.ErrRecordCount), errors.Is(err, batch.ErrInvalidRecord), errors.Is(err, batch.ErrCodec),
		errors.Is(err, partition.ErrOneBatch), errors.Is(err, partition.ErrControlBatch):
		return kerr.InvalidRecord.Code
	case errors.Is(err, partition.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, partition.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, partition.ErrProducerFenced):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, partition.ErrTransactional):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, partition.ErrNotLeader), errors.Is(err, partition.ErrUnknownReplica):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, partition.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, partition.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, partition.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, partition.ErrDiskFull):
		return kerr.KafkaStorageError.Code // retriable: tiering and retention free space
	case errors.Is(err, partition.ErrClosed), errors.Is(err, segment.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	}
	return kerr.KafkaStorageError.Code
}

// logUnexpected logs errors that map to a generic storage error: those are
// failures of Shale or its disk, not of the client's input.
func logUnexpected(log *slog.Logger, api, topic string, p int32, err error) {
	if err != nil && ErrorCode(err) == kerr.KafkaStorageError.Code {
		log.Error("request failed", "api", api, "topic", topic, "partition", p, "err", err)
	}
}
