package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafkaerr"
)

// Errors of the coordinator, translated to Kafka codes by errorCode. The
// first four are the coordinator runtime's, shared with the group
// coordinator.
var (
	// ErrNotCoordinator: this node does not lead the id's
	// __transaction_state partition, or lost it during the request
	// (NOT_COORDINATOR).
	ErrNotCoordinator = coordinator.ErrNotCoordinator
	// ErrLoadInProgress: the partition is being read
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = coordinator.ErrLoadInProgress
	// ErrCoordinatorNotAvailable: the state topic has no leader yet, could
	// not be created, or a state write was not replicated in time
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = coordinator.ErrCoordinatorNotAvailable
	// ErrConcurrentTransactions: a state change of the id is in flight, or
	// its last transaction is still being completed
	// (CONCURRENT_TRANSACTIONS); the client retries.
	ErrConcurrentTransactions = errors.New("txn: concurrent transactions")
	// ErrProducerFenced: the producer's epoch is not the current one: a
	// newer producer with the same transactional id, or a timeout abort,
	// fenced it (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH to older clients).
	ErrProducerFenced = errors.New("txn: producer fenced")
	// ErrInvalidProducerIDMapping: the producer id is not the one of the
	// transactional id (INVALID_PRODUCER_ID_MAPPING).
	ErrInvalidProducerIDMapping = errors.New("txn: producer id does not belong to the transactional id")
	// ErrInvalidTxnState: the request does not fit the transaction's
	// state, such as committing a transaction that is being aborted
	// (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("txn: invalid transaction state")
	// ErrInvalidTimeout: a transaction timeout not in (0,
	// transaction.max.timeout.ms] (INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTimeout = errors.New("txn: invalid transaction timeout")
	// ErrNotFound: no such transactional id (TRANSACTIONAL_ID_NOT_FOUND).
	ErrNotFound = errors.New("txn: transactional id not found")
	// ErrInvalidRequest: an empty transactional id (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("txn: invalid request")
	// ErrClosed: the coordinator is closed (NOT_COORDINATOR to clients).
	ErrClosed = coordinator.ErrClosed
	// ErrCorruptRecord: a __transaction_state record that does not decode.
	ErrCorruptRecord = errors.New("txn: corrupt __transaction_state record")
)

// codes is the coordinators' error table (the runtime's errors over the
// node's) with the transaction coordinator's own in front.
var codes = kafkaerr.Coordinators.With(
	kafka.Translation{Err: ErrConcurrentTransactions, Kafka: kerr.ConcurrentTransactions},
	kafka.Translation{Err: ErrProducerFenced, Kafka: kerr.ProducerFenced},
	kafka.Translation{Err: ErrInvalidProducerIDMapping, Kafka: kerr.InvalidProducerIDMapping},
	kafka.Translation{Err: ErrInvalidTxnState, Kafka: kerr.InvalidTxnState},
	kafka.Translation{Err: ErrInvalidTimeout, Kafka: kerr.InvalidTransactionTimeout},
	kafka.Translation{Err: ErrNotFound, Kafka: kerr.TransactionalIDNotFound},
	kafka.Translation{Err: ErrInvalidRequest, Kafka: kerr.InvalidRequest},
)

// ErrorCode translates an error of this package (or below) to a Kafka
// error code.
func ErrorCode(err error) int16 { return codes.Code(err) }

// fencedCode is PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for a request
// version older than fencedSince, as Kafka answers clients that predate
// PRODUCER_FENCED (KIP-588).
func fencedCode(err error, version, fencedSince int16) int16 {
	code := ErrorCode(err)
	if code == kerr.ProducerFenced.Code && version < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// ErrorCode translates an error of the coordinator (ingest's
// TxnCoordinator).
func (c *Coordinator) ErrorCode(err error) int16 { return ErrorCode(err) }
