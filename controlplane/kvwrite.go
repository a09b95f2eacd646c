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
