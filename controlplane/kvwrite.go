package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// kvDelete writes a KV delete marker and returns its revision, which the
// KeyValue API does not: the cache needs it to order the delete against
// other changes. expectRev > 0 makes it compare-and-set. The subject and
// header follow the KV protocol (NATS ADR-8).
func kvDelete(ctx context.Context, js jetstream.JetStream, bucket, key string, expectRev uint64) (uint64, error) {
	m := nats.NewMsg("$KV." + bucket + "." + key)
	m.Header.Set("KV-Operation", "DEL")
	var opts []jetstream.PublishOpt
	if expectRev > 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expectRev))
	}
	ack, err := js.PublishMsg(ctx, m, opts...)
	if err != nil {
		if isWrongLastSeq(err) {
			return 0, fmt.Errorf("%w: delete %s/%s at revision %d: %w", ErrConflict, bucket, key, expectRev, err)
		}
		return 0, fmt.Errorf("controlplane: delete %s/%s: %w", bucket, key, err)
	}
	return ack.Sequence, nil
}

// kvCreatePipeline bounds the creates kvCreateMany has in flight.
const kvCreatePipeline = 256

// kvCreateMany creates each keys[i] with values[i] in kv (bucket's
// KeyValue), create-if-absent as KeyValue.Create, with up to
// kvCreatePipeline writes in flight instead of one round trip per key: a
// topic of 10,000 partitions is 10,000 creates. It returns the revisions
// of the keys created, in order, up to the first failure, and that
// failure (isWrongLastSeq: the key exists). A key whose last operation was
// a delete is created through KeyValue.Create, which handles that case.
func kvCreateMany(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, bucket string, keys []string, values [][]byte) ([]uint64, error) {
	revs := make([]uint64, 0, len(keys))
	for from := 0; from < len(keys); from += kvCreatePipeline {
		to := min(from+kvCreatePipeline, len(keys))
		futures := make([]jetstream.PubAckFuture, 0, to-from)
		var sendErr error
		for i := from; i < to; i++ {
			m := nats.NewMsg("$KV." + bucket + "." + keys[i])
			m.Data = values[i]
			f, err := js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(0))
			if err != nil {
				sendErr = err
				break
			}
			futures = append(futures, f)
		}
		// Every future sent is waited for, so that none is left behind
		// in the client when this returns.
		var firstErr error
		for j, f := range futures {
			i := from + j
			var rev uint64
			var err error
			select {
			case ack := <-f.Ok():
				rev = ack.Sequence
			case err = <-f.Err():
			case <-ctx.Done():
				err = ctx.Err()
			}
			if err != nil && isWrongLastSeq(err) && firstErr == nil {
				// The key's last operation may be a delete marker.
				rev, err = kv.Create(ctx, keys[i], values[i])
			}
			if firstErr == nil {
				if err != nil {
					firstErr = err
				} else {
					revs = append(revs, rev)
				}
			}
		}
		if firstErr == nil {
			firstErr = sendErr
		}
		if firstErr != nil {
			return revs, firstErr
		}
	}
	return revs, nil
}

// isWrongLastSeq reports a lost compare-and-set (10071, or 10164 on
// replicated streams).
func isWrongLastSeq(err error) bool {
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// isKeyGone reports a Get of a key that does not exist or was deleted.
func isKeyGone(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}
