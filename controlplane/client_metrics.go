package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BucketClientMetrics holds the client metrics subscriptions (KIP-714),
// one key per subscription.
const BucketClientMetrics = "shale_client_metrics"

// ClientMetrics is the cluster's client metrics subscriptions, Kafka's
// CLIENT_METRICS config resources, in their own JetStream key-value
// bucket: one key per subscription name holding its configs (metrics,
// interval.ms, match) as JSON. Every node watches the bucket (Watch) and
// answers GetTelemetrySubscriptions from what it holds; writes are
// compare-and-set, so concurrent alterations of one subscription on
// different nodes both apply. The configs are stored as given: package
// clientmetrics validates them before they are written. Safe for
// concurrent use.
type ClientMetrics struct {
	*watchedBucket
}

// OpenClientMetrics opens (creating it if absent) the client metrics
// bucket with the given number of JetStream replicas. mon counts and logs
// the re-establishments of its watches (nil: not counted).
func OpenClientMetrics(ctx context.Context, nc *nats.Conn, replicas int, mon *ConnMonitor) (*ClientMetrics, error) {
	b, err := openWatchedBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketClientMetrics, Replicas: replicas,
		Description: "Shale client metrics subscriptions (KIP-714)"}, "client metrics", mon)
	if err != nil {
		return nil, err
	}
	return &ClientMetrics{b}, nil
}

// Alter applies change to the named subscription's configs by
// compare-and-set: change gets a copy of the current configs (empty when
// there is no such subscription) and returns the new ones, or an error
// that Alter returns unchanged; empty new configs delete the subscription,
// as Kafka removes one whose configs are all deleted. It retries a lost
// race up to 20 times.
func (m *ClientMetrics) Alter(ctx context.Context, name string, change func(map[string]string) (map[string]string, error)) error {
	_, _, err := alterJSON(ctx, m.kv, nameKey(name), fmt.Sprintf("client metrics %q", name), true, change)
	return err
}

// Get returns the named subscription's configs, nil when there is none.
func (m *ClientMetrics) Get(ctx context.Context, name string) (map[string]string, error) {
	cur, _, err := getJSON[map[string]string](ctx, m.kv, nameKey(name), fmt.Sprintf("client metrics %q", name))
	return cur, err
}

// Names lists the subscriptions' names (ListConfigResources).
func (m *ClientMetrics) Names(ctx context.Context) ([]string, error) { return m.names(ctx) }

// Watch calls apply with each subscription's configs as the bucket holds
// them, then with every change (nil configs for a deleted one), from one
// goroutine, in revision order, until Close. It returns once the current
// subscriptions have been applied, or when ctx ends first.
func (m *ClientMetrics) Watch(ctx context.Context, apply func(name string, configs map[string]string)) error {
	return m.watch(ctx, func(ch change) {
		b, err := base64.RawURLEncoding.DecodeString(ch.key)
		if err != nil {
			return
		}
		if v, ok := changedJSON[map[string]string](ch); ok {
			apply(string(b), v)
		}
	})
}
