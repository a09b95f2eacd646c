package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

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
	kv  jetstream.KeyValue
	nc  *nats.Conn
	mon *ConnMonitor

	mu      sync.Mutex
	watches []*bucketWatch
}

// OpenClientMetrics opens (creating it if absent) the client metrics
// bucket with the given number of JetStream replicas. mon counts and logs
// the re-establishments of its watches (nil: not counted).
func OpenClientMetrics(ctx context.Context, nc *nats.Conn, replicas int, mon *ConnMonitor) (*ClientMetrics, error) {
	kv, err := OpenBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketClientMetrics, Replicas: replicas,
		Description: "Shale client metrics subscriptions (KIP-714)"})
	if err != nil {
		return nil, fmt.Errorf("client metrics: %w", err)
	}
	return &ClientMetrics{kv: kv, nc: nc, mon: mon}, nil
}

// clientMetricsKey is a subscription name as a key: base64url, since a
// name may hold any character and keys only a few.
func clientMetricsKey(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// Alter applies change to the named subscription's configs by
// compare-and-set: change gets a copy of the current configs (empty when
// there is no such subscription) and returns the new ones, or an error
// that Alter returns unchanged; empty new configs delete the subscription,
// as Kafka removes one whose configs are all deleted. It retries a lost
// race up to 20 times.
func (m *ClientMetrics) Alter(ctx context.Context, name string, change func(map[string]string) (map[string]string, error)) error {
	key := clientMetricsKey(name)
	for range 20 {
		cur := map[string]string{}
		var rev uint64
		entry, err := m.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("controlplane: read client metrics %q: %w", name, err)
		default:
			rev = entry.Revision()
			if err := json.Unmarshal(entry.Value(), &cur); err != nil {
				return fmt.Errorf("controlplane: client metrics %q: %w", name, err)
			}
		}
		next, err := change(cur)
		if err != nil {
			return err
		}
		switch {
		case len(next) == 0 && rev == 0:
			return nil
		case len(next) == 0:
			err = m.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		default:
			data, merr := json.Marshal(next)
			if merr != nil {
				return merr
			}
			if rev == 0 {
				_, err = m.kv.Create(ctx, key, data)
			} else {
				_, err = m.kv.Update(ctx, key, data, rev)
			}
		}
		if err == nil {
			return nil
		}
		if !isWrongLastSeq(err) {
			return fmt.Errorf("controlplane: write client metrics %q: %w", name, err)
		}
	}
	return fmt.Errorf("controlplane: write client metrics %q: lost 20 races", name)
}

// Get returns the named subscription's configs, nil when there is none.
func (m *ClientMetrics) Get(ctx context.Context, name string) (map[string]string, error) {
	entry, err := m.kv.Get(ctx, clientMetricsKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("controlplane: read client metrics %q: %w", name, err)
	}
	cur := map[string]string{}
	if err := json.Unmarshal(entry.Value(), &cur); err != nil {
		return nil, fmt.Errorf("controlplane: client metrics %q: %w", name, err)
	}
	return cur, nil
}

// Names lists the subscriptions' names (ListConfigResources).
func (m *ClientMetrics) Names(ctx context.Context) ([]string, error) {
	lister, err := m.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: list client metrics: %w", err)
	}
	var out []string
	for key := range lister.Keys() {
		if b, err := base64.RawURLEncoding.DecodeString(key); err == nil {
			out = append(out, string(b))
		}
	}
	return out, nil
}

// Watch calls apply with each subscription's configs as the bucket holds
// them, then with every change (nil configs for a deleted one), from one
// goroutine, in revision order, until Close. It returns once the current
// subscriptions have been applied, or when ctx ends first.
func (m *ClientMetrics) Watch(ctx context.Context, apply func(name string, configs map[string]string)) error {
	w, err := startWatch(m.nc, BucketClientMetrics, m.mon, func(ch change) {
		b, err := base64.RawURLEncoding.DecodeString(ch.key)
		if err != nil {
			return
		}
		var v map[string]string
		if !ch.deleted && json.Unmarshal(ch.value, &v) != nil {
			return
		}
		apply(string(b), v)
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.watches = append(m.watches, w)
	m.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("controlplane: client metrics initial load: %w", ctx.Err())
	}
}

// Close stops the watches. Idempotent.
func (m *ClientMetrics) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.watches {
		w.stop()
	}
	m.watches = nil
}
