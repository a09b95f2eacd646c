package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Verifier is the partition leader's side of KIP-890 part 1 (ingest's
// TxnVerifier): before the first batch of a producer's transaction is
// appended to a partition, the leader asks the transaction coordinator,
// with AddPartitionsToTxn v4 VerifyOnly, whether the partition is in the
// producer's ongoing transaction. A batch that arrives after its
// transaction ended (a retry, a zombie) would otherwise open a
// transaction that nothing ends. It sends with the marker sender's
// client to the coordinator this node's metadata names (Coordinator), as
// Kafka's leader looks the coordinator up for each check: a coordinator
// that moved answers NOT_COORDINATOR per partition with a top-level code
// of 0, which franz-go's coordinator cache does not drop, so a check sent
// through that cache went to the old coordinator until the producer gave
// up (the chaos suite's transactions schedule, seed 203 at 9e940fa:
// STUCK after a preferred election moved __transaction_state-30).
type Verifier struct {
	Client *KafkaMarkers
	// Coordinator returns the broker leading the id's __transaction_state
	// partition in this node's metadata; false when none leads. Nil: the
	// client's coordinator lookup.
	Coordinator func(transactionalID string) (int32, bool)
}

// VerifyTxn implements ingest.TxnVerifier: nil when the partition is in
// the transaction; the coordinator's answer (INVALID_TXN_STATE,
// INVALID_PRODUCER_ID_MAPPING, and INVALID_PRODUCER_EPOCH for its
// PRODUCER_FENCED, as Kafka's leader answers it) otherwise; and
// NOT_ENOUGH_REPLICAS, which producers retry, when the coordinator cannot
// answer now, as Kafka's leader answers then. With add (transactions v2,
// KIP-890 part 2: a Produce v12 or TxnOffsetCommit v5) it asks the
// coordinator to add the partition to the producer's transaction, as
// Kafka's AddPartitionsToTxnManager does, instead of only checking it; an
// add answered CONCURRENT_TRANSACTIONS (the producer's previous
// transaction is still writing its markers, which with transactions v2
// is the common case right after EndTxn) is retried here every
// addRetryBackoff for up to addRetryMax, as Kafka's leader does
// (add.partitions.to.txn.retry.backoff.ms and .max.ms), before the
// producer is told to retry.
func (v Verifier) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	err := v.verifyOnce(ctx, transactionalID, producerID, epoch, topic, partition, add)
	if !add {
		return err
	}
	deadline := time.Now().Add(addRetryMax)
	for errors.Is(err, kerr.ConcurrentTransactions) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(addRetryBackoff):
		}
		err = v.verifyOnce(ctx, transactionalID, producerID, epoch, topic, partition, add)
	}
	return err
}

// Kafka's add.partitions.to.txn.retry.backoff.ms and
// add.partitions.to.txn.retry.backoff.max.ms defaults.
const (
	addRetryBackoff = 20 * time.Millisecond
	addRetryMax     = 100 * time.Millisecond
)

// verifyOnce is one round of VerifyTxn. A retriable error wraps
// NOT_ENOUGH_REPLICAS and the coordinator's own code.
func (v Verifier) verifyOnce(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	retry := func(err error) error {
		return fmt.Errorf("%w: verifying with the transaction coordinator: %w", kerr.NotEnoughReplicas, err)
	}
	cl, err := v.Client.client()
	if err != nil {
		return retry(err)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = transactionalID, producerID, epoch, !add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{partition}
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	var resp *kmsg.AddPartitionsToTxnResponse
	if v.Coordinator != nil {
		id, ok := v.Coordinator(transactionalID)
		if !ok {
			return retry(fmt.Errorf("%w: no leader of its %s partition", kerr.CoordinatorNotAvailable, StateTopic))
		}
		if len(cl.DiscoveredBrokers()) == 0 {
			// A new client knows only its seed: load the brokers first.
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
				return retry(err)
			}
		}
		kr, err := cl.Broker(int(id)).Request(ctx, req)
		if err != nil {
			cl.ForceMetadataRefresh() // a broker the client does not know yet
			return retry(err)
		}
		resp = kr.(*kmsg.AddPartitionsToTxnResponse)
	} else if resp, err = req.RequestWith(ctx, cl); err != nil {
		return retry(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return retry(err)
	}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				if t.Topic != topic || p.Partition != partition {
					continue
				}
				switch code := p.ErrorCode; code {
				case 0:
					return nil
				case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code:
					return retry(kerr.ErrorForCode(code))
				case kerr.ProducerFenced.Code:
					// As Kafka's AddPartitionsToTxnManager: producers
					// take INVALID_PRODUCER_EPOCH for an abortable error
					// (KIP-588) where PRODUCER_FENCED is fatal to them,
					// and a batch at an epoch an abort bumped past is
					// the former.
					return kerr.InvalidProducerEpoch
				default:
					return kerr.ErrorForCode(code)
				}
			}
		}
	}
	return retry(fmt.Errorf("no answer for %s-%d", topic, partition))
}
