package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BucketFeatures holds the cluster's finalized feature levels.
const BucketFeatures = "shale_features"

// featuresKey is the one key of BucketFeatures: the levels UpdateFeatures
// finalized, as JSON, by feature name.
const featuresKey = "finalized"

// Features is the cluster's finalized feature levels (KIP-584; Kafka's
// FeatureLevelRecords) in their own JetStream key-value bucket: the levels
// set by UpdateFeatures, each feature named there, 0 included (a feature
// removed). A feature never named keeps its node's configured level. Every
// node watches the bucket (Watch) and advertises what it holds in
// ApiVersions; writes are compare-and-set. Safe for concurrent use.
type Features struct {
	kv  jetstream.KeyValue
	nc  *nats.Conn
	mon *ConnMonitor

	mu      sync.Mutex
	watches []*bucketWatch
}

// OpenFeatures opens (creating it if absent) the features bucket with the
// given number of JetStream replicas; mon counts its watch's
// re-establishments (nil: not counted).
func OpenFeatures(ctx context.Context, nc *nats.Conn, replicas int, mon *ConnMonitor) (*Features, error) {
	kv, err := OpenBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketFeatures, Replicas: replicas,
		Description: "Shale finalized features"})
	if err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	return &Features{kv: kv, nc: nc, mon: mon}, nil
}

// Update applies change to the finalized levels by compare-and-set:
// change gets a copy of the levels set so far (empty when none) and
// returns the new ones, or an error that Update returns as it is, writing
// nothing. It retries a lost race up to 20 times.
func (f *Features) Update(ctx context.Context, change func(map[string]int16) (map[string]int16, error)) error {
	for attempt := 0; attempt < 20; attempt++ {
		cur := map[string]int16{}
		var rev uint64
		entry, err := f.kv.Get(ctx, featuresKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("controlplane: read features: %w", err)
		default:
			rev = entry.Revision()
			if err := json.Unmarshal(entry.Value(), &cur); err != nil {
				return fmt.Errorf("controlplane: features: %w", err)
			}
		}
		next, err := change(cur)
		if err != nil {
			return err
		}
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = f.kv.Create(ctx, featuresKey, data)
		} else {
			_, err = f.kv.Update(ctx, featuresKey, data, rev)
		}
		if err == nil {
			return nil
		}
		if !isWrongLastSeq(err) && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("controlplane: write features: %w", err)
		}
	}
	return errors.New("controlplane: write features: lost 20 races")
}

// Watch calls apply with the finalized levels as the bucket holds them
// (empty when none was ever set) and their revision (0 then), then with
// every change, from one goroutine, in revision order, until Close. It
// returns once the current levels have been applied, or when ctx ends
// first.
func (f *Features) Watch(ctx context.Context, apply func(levels map[string]int16, rev uint64)) error {
	w, err := startWatch(f.nc, BucketFeatures, f.mon, func(ch change) {
		if ch.key != featuresKey {
			return
		}
		levels := map[string]int16{}
		if !ch.deleted && json.Unmarshal(ch.value, &levels) != nil {
			return
		}
		apply(levels, ch.rev)
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.watches = append(f.watches, w)
	f.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("controlplane: features initial load: %w", ctx.Err())
	}
}

// Close stops the watches. Idempotent.
func (f *Features) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		w.stop()
	}
	f.watches = nil
}
