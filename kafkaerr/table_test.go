package kafkaerr

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering/coldread"
)

// TestTable pins what a client gets for each of Shale's errors, wrapped as
// the layers below wrap them, and whether Kafka's clients retry it.
func TestTable(t *testing.T) {
	for _, c := range []struct {
		err       error
		want      *kerr.Error
		retriable bool
	}{
		{nil, nil, false},
		{batch.ErrCRC, kerr.CorruptMessage, true},
		{batch.ErrTooLarge, kerr.MessageTooLarge, false},
		{segment.ErrTooLarge, kerr.RecordListTooLarge, false},
		{batch.ErrCodec, kerr.InvalidRecord, false},
		{partition.ErrInvalidTimestamp, kerr.InvalidTimestamp, false},
		{partition.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber, false},
		{partition.ErrProducerFenced, kerr.InvalidProducerEpoch, false},
		{partition.ErrNotLeader, kerr.NotLeaderForPartition, true},
		{partition.ErrClosed, kerr.NotLeaderForPartition, true},
		{partition.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition, true},
		{partition.ErrNotEnoughReplicas, kerr.NotEnoughReplicas, true},
		{partition.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend, true},
		{segment.ErrOffsetOutOfRange, kerr.OffsetOutOfRange, false},
		// Disk full stays retriable: tiering and retention free space.
		{partition.ErrDiskFull, kerr.KafkaStorageError, true},
		{coldread.ErrRemoteRead, kerr.KafkaStorageError, true},
		{controlplane.ErrTopicExists, kerr.TopicAlreadyExists, false},
		{controlplane.ErrUnknownTopic, kerr.UnknownTopicOrPartition, true},
		{config.ErrUnknownConfig, kerr.InvalidConfig, false},
		{controlplane.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress, false},
		{controlplane.ErrConflict, kerr.NotController, true},
		// Wrapped, as the layers below return them.
		{fmt.Errorf("partition t-0: append: %w", partition.ErrDiskFull), kerr.KafkaStorageError, true},
		{fmt.Errorf("fetch: %w: %w", coldread.ErrRemoteRead, syscall.EIO), kerr.KafkaStorageError, true},
		// The same unknown-error default on every path.
		{errors.New("surprise"), kerr.UnknownServerError, false},
	} {
		if got := Table.Error(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
		if got := Table.Retriable(c.err); got != c.retriable {
			t.Errorf("%v: retriable %v, want %v", c.err, got, c.retriable)
		}
	}
}

// TestCoordinators pins what the coordinators on the runtime (group, txn)
// answer for the runtime's errors, wrapped as they wrap them: a failed
// append or a lost leadership is NOT_COORDINATOR (the client looks for
// the coordinator again) whatever it wraps; the rest is Table's.
func TestCoordinators(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{coordinator.ErrNotCoordinator, kerr.NotCoordinator},
		{coordinator.ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
		{coordinator.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{coordinator.ErrClosed, kerr.NotCoordinator},
		{fmt.Errorf("%w: appending to __consumer_offsets-3: %w", coordinator.ErrNotCoordinator, partition.ErrDiskFull), kerr.NotCoordinator},
		{fmt.Errorf("%w: %w", coordinator.ErrNotCoordinator, partition.ErrNotLeader), kerr.NotCoordinator},
		{fmt.Errorf("%w: %w", coordinator.ErrCoordinatorNotAvailable, partition.ErrNotEnoughReplicas), kerr.CoordinatorNotAvailable},
		{partition.ErrNotLeader, kerr.NotLeaderForPartition},
	} {
		if got := Coordinators.Error(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

// TestTableIsKafkas checks each translation against franz-go's kerr: the
// code is one Kafka defines, and its retriability is Kafka's.
func TestTableIsKafkas(t *testing.T) {
	for _, tr := range Table.Translations() {
		if got := kerr.ErrorForCode(tr.Kafka.Code); got != tr.Kafka {
			t.Errorf("%v -> %v: kerr knows code %d as %v", tr.Err, tr.Kafka, tr.Kafka.Code, got)
		}
		if Code(tr.Err) != tr.Kafka.Code {
			t.Errorf("%v: Code %d, want %d (an earlier translation shadows it)", tr.Err, Code(tr.Err), tr.Kafka.Code)
		}
	}
}
