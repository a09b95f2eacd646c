package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OpenBucket opens the key-value bucket cfg names, creating it with cfg
// when it does not exist. An existing bucket is used with its own settings.
// It is how the control plane's side buckets (producer ids, SCRAM
// credentials, ...) are opened: one history entry and file storage unless
// cfg says otherwise, at least one replica, and a 10 s bound on the calls.
//
// It uses CreateKeyValue, not CreateOrUpdateKeyValue: concurrent stream
// updates of one replicated bucket (nodes starting together) can hang until
// the deadline on a NATS cluster.
func OpenBucket(ctx context.Context, nc *nats.Conn, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg.Replicas = max(cfg.Replicas, 1)
	if cfg.History == 0 {
		cfg.History = 1
	}
	kv, err := js.CreateKeyValue(cctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(cctx, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("controlplane: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}
