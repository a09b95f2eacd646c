package controlplane

import (
	"context"
	"encoding/json"

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
	*watchedBucket
}

// OpenFeatures opens (creating it if absent) the features bucket with the
// given number of JetStream replicas; mon counts its watch's
// re-establishments (nil: not counted).
func OpenFeatures(ctx context.Context, nc *nats.Conn, replicas int, mon *ConnMonitor) (*Features, error) {
	b, err := openWatchedBucket(ctx, nc, jetstream.KeyValueConfig{Bucket: BucketFeatures, Replicas: replicas,
		Description: "Shale finalized features"}, "features", mon)
	if err != nil {
		return nil, err
	}
	return &Features{b}, nil
}

// Update applies change to the finalized levels by compare-and-set:
// change gets a copy of the levels set so far (empty when none) and
// returns the new ones, or an error that Update returns as it is, writing
// nothing. It retries a lost race up to 20 times.
func (f *Features) Update(ctx context.Context, change func(map[string]int16) (map[string]int16, error)) error {
	_, _, err := alterJSON(ctx, f.kv, featuresKey, "features", false, change)
	return err
}

// Watch calls apply with the finalized levels as the bucket holds them
// (empty when none was ever set) and their revision (0 then), then with
// every change, from one goroutine, in revision order, until Close. It
// returns once the current levels have been applied, or when ctx ends
// first.
func (f *Features) Watch(ctx context.Context, apply func(levels map[string]int16, rev uint64)) error {
	return f.watch(ctx, func(ch change) {
		if ch.key != featuresKey {
			return
		}
		levels := map[string]int16{}
		if !ch.deleted && json.Unmarshal(ch.value, &levels) != nil {
			return
		}
		apply(levels, ch.rev)
	})
}
