package controlplane

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsErrUnavailable is JetStream's "JetStream system temporarily
// unavailable" (503): a cluster without a meta leader, as after a pause or
// a restart of its servers.
const jsErrUnavailable jetstream.ErrorCode = 10008

// Unavailable reports whether err says that JetStream did not answer or
// could not answer yet (no reply in time, no responder, no meta leader),
// which a later try may get past, as opposed to an answer that refuses.
func Unavailable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jsErrUnavailable
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// whileUnavailable runs call until it returns an answer or ctx ends, each
// try bounded by timeout (a request whose reply is lost, not only a slow
// one, is sent again), trying again after a growing wait while JetStream is
// unavailable. It is for the control plane's opening at a node's start,
// which ctx bounds (the node's initial_broker_registration_timeout): the
// buckets' creation and the cluster id are idempotent, and a NATS that is
// busy, paused or electing its meta leader is waited for rather than
// failing the start. A try's own timeout counts as unavailable only while
// ctx lives.
func whileUnavailable(ctx context.Context, log *slog.Logger, timeout time.Duration, what string, call func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		err := call(tctx)
		cancel()
		if err == nil || !Unavailable(err) || ctx.Err() != nil {
			return err
		}
		if log != nil {
			log.Warn("control plane unavailable; trying again", "what", what, "err", err, "in", wait)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
